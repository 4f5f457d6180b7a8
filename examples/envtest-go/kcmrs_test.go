package kcmrs_test

import (
	"context"
	"os"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/kcm-rs/kcm-rs/examples/envtest-go"
)

// waitFor polls check every 100 ms until it returns true or a minute passes.
func waitFor(t *testing.T, what string, check func() (bool, error)) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	var last error
	for time.Now().Before(deadline) {
		ok, err := check()
		if ok {
			return
		}
		last = err
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s: not within a minute (last error: %v)", what, last)
}

// available is true once d's controller has seen its latest spec and it runs want ready pods of it.
func available(d *appsv1.Deployment, want int32) bool {
	s := d.Status
	if s.ObservedGeneration != d.Generation || s.UpdatedReplicas != want || s.AvailableReplicas != want {
		return false
	}
	for _, c := range s.Conditions {
		if c.Type == appsv1.DeploymentAvailable && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// complete is true once j has the Complete condition.
func complete(j *batchv1.Job) bool {
	for _, c := range j.Status.Conditions {
		if c.Type == batchv1.JobComplete && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// A Deployment rolls out and a Job completes on envtest's API server, with kcm-rs as the
// controllers, KWOK as the node and, if $KUBE_SCHEDULER_BIN is set, kube-scheduler binding the
// pods.
func TestDeploymentRollsOutAndJobCompletes(t *testing.T) {
	// Without a node no pod ever becomes Ready: better said now than after a minute's wait.
	if os.Getenv("KWOK_BIN") == "" {
		t.Fatal("this test needs KWOK_BIN and KWOK_CONFIG (hack/envtest.sh go sets them)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	t0 := time.Now()
	since := func() time.Duration { return time.Since(t0).Round(time.Millisecond) }

	env := &envtest.Environment{}
	cfg, err := env.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = env.Stop() }()
	t.Logf("%8s  envtest started", since())

	// The three lines a test adds.
	p, err := kcmrs.Start(ctx, env, kcmrs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	t.Logf("%8s  kcm-rs ready", since())

	c := kubernetes.NewForConfigOrDie(cfg)
	// Real manifests leave nodeName to the scheduler; without one, bind the pods directly.
	nodeName := ""
	if os.Getenv("KUBE_SCHEDULER_BIN") == "" {
		nodeName = kcmrs.NodeName
	}
	labels := map[string]string{"app": "web"}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					NodeName:   nodeName,
					Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}},
				},
			},
		},
	}
	if _, err := c.AppsV1().Deployments("default").Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the Deployment to roll out", func() (bool, error) {
		d, err := c.AppsV1().Deployments("default").Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return available(d, 2), nil
	})
	t.Logf("%8s  Deployment rolled out: Available, 2 available replicas", since())

	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "work", Namespace: "default"},
		Spec: batchv1.JobSpec{
			Completions: ptr.To[int32](2),
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				NodeName:      nodeName,
				RestartPolicy: corev1.RestartPolicyNever,
				Containers:    []corev1.Container{{Name: "c", Image: "busybox", Command: []string{"true"}}},
			}},
		},
	}
	if _, err := c.BatchV1().Jobs("default").Create(ctx, job, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the Job to complete", func() (bool, error) {
		j, err := c.BatchV1().Jobs("default").Get(ctx, "work", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return complete(j) && j.Status.Succeeded == 2, nil
	})
	t.Logf("%8s  Job complete: 2 succeeded", since())
}

// startWith starts envtest's API server and kcm-rs with controllers, both stopped when the test
// ends; the context (two minutes) and a client of that API server.
func startWith(t *testing.T, controllers string) (context.Context, *kubernetes.Clientset) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	env := &envtest.Environment{}
	cfg, err := env.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	p, err := kcmrs.Start(ctx, env, kcmrs.Options{Controllers: controllers})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	return ctx, kubernetes.NewForConfigOrDie(cfg)
}

// A deleted namespace is emptied and goes when kcm-rs runs its namespace controller: envtest has
// no kube-controller-manager, so without it the namespace would stay Terminating.
func TestDeletedNamespaceGoesWithTheNamespaceController(t *testing.T) {
	ctx, c := startWith(t, "*,namespace-controller")
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "scratch"}}
	if _, err := c.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings"}}
	if _, err := c.CoreV1().ConfigMaps("scratch").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := c.CoreV1().Namespaces().Delete(ctx, "scratch", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the namespace to go", func() (bool, error) {
		_, err := c.CoreV1().Namespaces().Get(ctx, "scratch", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
}

// A deleted Deployment takes its ReplicaSet and pods with it when kcm-rs runs its garbage
// collector: envtest has no kube-controller-manager, so without it they would stay, owned by
// nothing.
func TestDeletedDeploymentGoesWithTheGarbageCollector(t *testing.T) {
	ctx, c := startWith(t, "*,garbage-collector-controller")
	labels := map[string]string{"app": "collected"}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "collected", Namespace: "default"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}},
				},
			},
		},
	}
	if _, err := c.AppsV1().Deployments("default").Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	selector := metav1.ListOptions{LabelSelector: "app=collected"}
	counts := func() (int, int, error) {
		rs, err := c.AppsV1().ReplicaSets("default").List(ctx, selector)
		if err != nil {
			return 0, 0, err
		}
		pods, err := c.CoreV1().Pods("default").List(ctx, selector)
		if err != nil {
			return 0, 0, err
		}
		return len(rs.Items), len(pods.Items), nil
	}
	waitFor(t, "the ReplicaSet and its 2 pods", func() (bool, error) {
		rs, pods, err := counts()
		return rs == 1 && pods == 2, err
	})
	if err := c.AppsV1().Deployments("default").Delete(ctx, "collected", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the ReplicaSet and its pods to go", func() (bool, error) {
		rs, pods, err := counts()
		return rs == 0 && pods == 0, err
	})
}
