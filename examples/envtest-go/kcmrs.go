// Package kcmrs runs kcm-rs beside a controller-runtime envtest environment, so that a test on
// envtest's etcd and kube-apiserver gets working Deployments, ReplicaSets and Jobs:
//
//	p, err := kcmrs.Start(ctx, testEnv, kcmrs.Options{})
//	if err != nil { t.Fatal(err) }
//	defer p.Stop()
//
// envtest starts no controllers, no scheduler and no nodes. kcm-rs is the controllers. Pods still
// need a node to become Ready and Job pods to Succeed: with KWOK (Options.KwokBinary or $KWOK_BIN) a
// fake node is registered and simulated, and with kube-scheduler (Options.SchedulerBinary or
// $KUBE_SCHEDULER_BIN) pods are bound to it as in a real cluster. Without a scheduler, give the pod
// templates spec.nodeName = kcmrs.NodeName.
package kcmrs

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// NodeName is the fake node registered when KWOK runs.
const NodeName = "kwok-node-0"

// readyTimeout bounds the wait for kcm-rs's /readyz: its caches sync in well under a second on an
// empty API server, so this only catches a process that cannot start.
const readyTimeout = 30 * time.Second

// stopGrace is how long Stop waits after SIGTERM before SIGKILL: kcm-rs drains for at most 30 s.
const stopGrace = 35 * time.Second

// Options says where the binaries are and what kcm-rs runs. Zero values take the environment.
type Options struct {
	// Binary is kcm-rs; default $KCM_RS_BIN, then kcm-rs on $PATH.
	Binary string
	// KwokBinary, if set (default $KWOK_BIN), runs KWOK for the fake node RegisterNode creates.
	KwokBinary string
	// KwokConfig is the file of KWOK Stages saying how nodes and pods progress (default
	// $KWOK_CONFIG); KWOK runs none without one. kcm-rs's hack/kwok/stages.yaml makes pods Ready,
	// Job pods Succeed, and deleted pods go.
	KwokConfig string
	// SchedulerBinary, if set (default $KUBE_SCHEDULER_BIN), runs kube-scheduler.
	SchedulerBinary string
	// Controllers is kcm-rs's --controllers; default all of them.
	Controllers string
	// Args are more kcm-rs flags.
	Args []string
	// Output receives every process's output; default os.Stderr.
	Output io.Writer
}

// Process is what Start started.
type Process struct {
	dir   string
	procs []*proc
}

// proc is one started process; done closes once it has exited and been waited for.
type proc struct {
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

// Start writes a kubeconfig for a cluster-admin user of env (envtest's AddUser), starts what
// opts asks for, and returns once kcm-rs answers /readyz.
func Start(ctx context.Context, env *envtest.Environment, opts Options) (*Process, error) {
	opts.defaults()
	if opts.Binary == "" {
		return nil, errors.New("kcmrs: no kcm-rs binary: set Options.Binary or $KCM_RS_BIN")
	}
	dir, err := os.MkdirTemp("", "kcmrs-")
	if err != nil {
		return nil, err
	}
	p := &Process{dir: dir}
	if err := p.start(ctx, env, opts); err != nil {
		p.Stop()
		return nil, err
	}
	return p, nil
}

func (o *Options) defaults() {
	if o.Binary == "" {
		o.Binary = os.Getenv("KCM_RS_BIN")
	}
	if o.Binary == "" {
		o.Binary, _ = exec.LookPath("kcm-rs")
	}
	if o.KwokBinary == "" {
		o.KwokBinary = os.Getenv("KWOK_BIN")
	}
	if o.KwokConfig == "" {
		o.KwokConfig = os.Getenv("KWOK_CONFIG")
	}
	if o.SchedulerBinary == "" {
		o.SchedulerBinary = os.Getenv("KUBE_SCHEDULER_BIN")
	}
	if o.Controllers == "" {
		o.Controllers = "*"
	}
	if o.Output == nil {
		o.Output = os.Stderr
	}
}

func (p *Process) start(ctx context.Context, env *envtest.Environment, opts Options) error {
	user, err := env.ControlPlane.AddUser(envtest.User{Name: "kcm-rs", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return fmt.Errorf("kcmrs: adding a user to envtest: %w", err)
	}
	kubeconfig, err := user.KubeConfig()
	if err != nil {
		return fmt.Errorf("kcmrs: the user's kubeconfig: %w", err)
	}
	path := filepath.Join(p.dir, "kubeconfig")
	if err := os.WriteFile(path, kubeconfig, 0o600); err != nil {
		return err
	}
	if opts.KwokBinary != "" {
		if err := p.startKwok(path, opts); err != nil {
			return err
		}
	}
	if opts.SchedulerBinary != "" {
		port, err := freePort()
		if err != nil {
			return err
		}
		p.run(opts, opts.SchedulerBinary, "--kubeconfig="+path, "--leader-elect=false",
			"--bind-address=127.0.0.1", "--secure-port="+strconv.Itoa(port))
	}
	port, err := freePort()
	if err != nil {
		return err
	}
	args := append([]string{
		"--kubeconfig=" + path,
		"--controllers=" + opts.Controllers,
		// One copy per test environment: nothing to elect.
		"--leader-elect=false",
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(port),
	}, opts.Args...)
	kcm := p.run(opts, opts.Binary, args...)
	if kcm == nil {
		return fmt.Errorf("kcmrs: starting %s failed", opts.Binary)
	}
	return waitReady(ctx, kcm, port)
}

// startKwok runs KWOK for every node and registers one node with room for many pods.
func (p *Process) startKwok(kubeconfig string, opts Options) error {
	if opts.KwokConfig == "" {
		return errors.New("kcmrs: KWOK needs its Stages: set Options.KwokConfig or $KWOK_CONFIG")
	}
	// Its own working directory, so that a ~/.kwok/kwok.yaml of the user's is not read.
	work := filepath.Join(p.dir, "kwok")
	if err := os.MkdirAll(work, 0o755); err != nil {
		return err
	}
	port, err := freePort()
	if err != nil {
		return err
	}
	cmd := exec.Command(opts.KwokBinary, "--kubeconfig="+kubeconfig, "--config="+opts.KwokConfig,
		"--manage-all-nodes=true",
		"--server-address=127.0.0.1:"+strconv.Itoa(port))
	cmd.Env = append(os.Environ(), "KWOK_WORKDIR="+work)
	if p.spawn(cmd, opts) == nil {
		return fmt.Errorf("kcmrs: starting %s failed", opts.KwokBinary)
	}
	return nil
}

// RegisterNode creates the fake node KWOK then keeps Ready: call it with a clientset for env.
func RegisterNode(ctx context.Context, c kubernetes.Interface) error {
	room := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("32"),
		corev1.ResourceMemory: resource.MustParse("256Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
	}
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        NodeName,
			Annotations: map[string]string{"kwok.x-k8s.io/node": "fake"},
			Labels:      map[string]string{"kubernetes.io/hostname": NodeName, "type": "kwok"},
		},
		Status: corev1.NodeStatus{Capacity: room, Allocatable: room},
	}
	created, err := c.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	// The API server taints every new node not-ready (admission plugin TaintNodesByCondition), and
	// KCM's node lifecycle controller lifts it once the node is Ready. Without KCM nothing would, and
	// no pod would ever be scheduled; KWOK keeps the node Ready, so lift it here.
	created.Spec.Taints = nil
	_, err = c.CoreV1().Nodes().Update(ctx, created, metav1.UpdateOptions{})
	return err
}

func (p *Process) run(opts Options, bin string, args ...string) *proc {
	return p.spawn(exec.Command(bin, args...), opts)
}

func (p *Process) spawn(cmd *exec.Cmd, opts Options) *proc {
	cmd.Stdout, cmd.Stderr = opts.Output, opts.Output
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(opts.Output, "kcmrs: %s: %v\n", cmd.Path, err)
		return nil
	}
	pr := &proc{cmd: cmd, done: make(chan struct{})}
	go func() { pr.err = cmd.Wait(); close(pr.done) }()
	p.procs = append(p.procs, pr)
	return pr
}

// waitReady polls kcm-rs's /readyz (HTTPS with its self-signed certificate; an always-allowed
// path, as in KCM) until 200, the process exits, or readyTimeout passes.
func waitReady(ctx context.Context, kcm *proc, port int) error {
	client := &http.Client{
		Timeout:   2 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}},
	}
	url := fmt.Sprintf("https://127.0.0.1:%d/readyz", port)
	deadline := time.Now().Add(readyTimeout)
	for time.Now().Before(deadline) {
		select {
		case <-kcm.done:
			return fmt.Errorf("kcmrs: kcm-rs exited before it was ready: %v", kcm.err)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		resp, err := client.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
	}
	return fmt.Errorf("kcmrs: %s did not answer 200 within %s", url, readyTimeout)
}

// Stop stops every process it started (SIGTERM, then SIGKILL after stopGrace) and removes their
// files. Safe to call twice.
func (p *Process) Stop() {
	for i := len(p.procs) - 1; i >= 0; i-- {
		pr := p.procs[i]
		_ = pr.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-pr.done:
		case <-time.After(stopGrace):
			_ = pr.cmd.Process.Kill()
			<-pr.done
		}
	}
	p.procs = nil
	_ = os.RemoveAll(p.dir)
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
