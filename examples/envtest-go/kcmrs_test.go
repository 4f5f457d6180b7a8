package kcmrs_test

import (
	"context"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
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

// A Deployment rolls out and a Job completes on envtest's API server, with kcm-rs as the
// controllers, KWOK as the node and kube-scheduler binding the pods.
func TestDeploymentRollsOutAndJobCompletes(t *testing.T) {
	ctx := context.Background()
	t0 := time.Now()
	env := &envtest.Environment{}
	cfg, err := env.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = env.Stop() }()

	// The three lines a test adds.
	p, err := kcmrs.Start(ctx, env, kcmrs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()

	c := kubernetes.NewForConfigOrDie(cfg)
	if err := kcmrs.RegisterNode(ctx, c); err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{"app": "web"}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}}},
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
		s := d.Status
		return s.ObservedGeneration == d.Generation && s.UpdatedReplicas == 2 && s.AvailableReplicas == 2, nil
	})
	t.Logf("envtest start to a rolled-out Deployment: %s", time.Since(t0).Round(time.Millisecond))

	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "work", Namespace: "default"},
		Spec: batchv1.JobSpec{
			Completions: ptr.To[int32](2),
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
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
		for _, cond := range j.Status.Conditions {
			if cond.Type == batchv1.JobComplete && cond.Status == corev1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
	t.Logf("envtest start to a completed Job: %s", time.Since(t0).Round(time.Millisecond))
}
