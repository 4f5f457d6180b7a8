// Package kcmrs runs kcm-rs beside a controller-runtime envtest environment, so that a test on
// envtest's etcd and kube-apiserver gets working Deployments, ReplicaSets and Jobs:
//
//	p, err := kcmrs.Start(ctx, testEnv, kcmrs.Options{})
//	if err != nil { t.Fatal(err) }
//	defer p.Stop()
//
// envtest starts no controllers, no scheduler and no nodes. kcm-rs is the controllers. Pods still
// need a node to become Ready and Job pods to Succeed: with KWOK (Options.KwokBinary or $KWOK_BIN)
// Start registers a fake node that KWOK keeps Ready and whose pods it runs, and with kube-scheduler
// (Options.SchedulerBinary or $KUBE_SCHEDULER_BIN) pods are bound to it as in a real cluster.
// Without a scheduler, give the pod templates spec.nodeName = kcmrs.NodeName.
package kcmrs

import (
	"bytes"
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
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// NodeName is the fake node Start registers when KWOK runs.
const NodeName = "kwok-node-0"

// readyTimeout bounds the wait for the processes' health endpoints: on an empty API server they
// answer within a second or two, so this only catches a process that cannot start.
const readyTimeout = 30 * time.Second

// stopGrace is how long Stop waits after SIGTERM before SIGKILL: kcm-rs drains for at most 30 s.
const stopGrace = 35 * time.Second

// Options says where the binaries are and what kcm-rs runs. Zero values take the environment.
type Options struct {
	// Binary is kcm-rs; default $KCM_RS_BIN, then kcm-rs on $PATH.
	Binary string
	// KwokBinary, if set (default $KWOK_BIN), runs KWOK and registers the fake node NodeName.
	KwokBinary string
	// KwokConfig is the file of KWOK Stages saying how nodes and pods progress (default
	// $KWOK_CONFIG); KWOK v0.8 has no built-in stages, so it is required with KWOK. kcm-rs's
	// hack/kwok/stages.yaml makes pods Ready, Job pods Succeed, and deleted pods go.
	KwokConfig string
	// SchedulerBinary, if set (default $KUBE_SCHEDULER_BIN), runs kube-scheduler.
	SchedulerBinary string
	// Controllers is kcm-rs's --controllers; default all of them.
	Controllers string
	// Args are more kcm-rs flags.
	Args []string
	// Output receives every process's output, each line prefixed with the process's name;
	// default os.Stderr. io.Discard silences them.
	Output io.Writer
}

// Process is what Start started.
type Process struct {
	dir   string
	out   *lockedWriter
	procs []*proc
}

// proc is one started process; done closes once it has exited and been waited for.
type proc struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

// Start writes a kubeconfig for a cluster-admin user of env (envtest's AddUser), starts what opts
// asks for, registers the fake node if KWOK runs, and returns once every process started answers
// its health endpoint. env must have been started.
func Start(ctx context.Context, env *envtest.Environment, opts Options) (*Process, error) {
	opts.defaults()
	if opts.Binary == "" {
		return nil, errors.New("kcmrs: no kcm-rs binary: set Options.Binary or $KCM_RS_BIN, or put kcm-rs on $PATH")
	}
	if opts.KwokBinary != "" && opts.KwokConfig == "" {
		return nil, errors.New("kcmrs: KWOK needs its Stages: set Options.KwokConfig or $KWOK_CONFIG " +
			"(kcm-rs's hack/kwok/stages.yaml)")
	}
	if env == nil || env.Config == nil {
		return nil, errors.New("kcmrs: the envtest environment is not started: call env.Start() first")
	}
	dir, err := os.MkdirTemp("", "kcmrs-")
	if err != nil {
		return nil, err
	}
	p := &Process{dir: dir, out: &lockedWriter{w: opts.Output}}
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

// health is a process's health endpoint to poll once everything is started.
type health struct {
	proc *proc
	url  string
}

func (p *Process) start(ctx context.Context, env *envtest.Environment, opts Options) error {
	// envtest's own admin config is not a file, and one of system:masters spares writing RBAC for
	// three components.
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

	var checks []health
	// All three start before any is waited for, so Start takes the slowest one's start-up, not
	// the sum.
	if opts.KwokBinary != "" {
		h, err := p.startKwok(path, opts)
		if err != nil {
			return err
		}
		checks = append(checks, h)
	}
	if opts.SchedulerBinary != "" {
		port, err := freePort()
		if err != nil {
			return err
		}
		pr, err := p.spawn("kube-scheduler", exec.Command(opts.SchedulerBinary, "--kubeconfig="+path,
			"--leader-elect=false", "--bind-address=127.0.0.1", "--secure-port="+strconv.Itoa(port)),
			"$KUBE_SCHEDULER_BIN")
		if err != nil {
			return err
		}
		checks = append(checks, health{pr, fmt.Sprintf("https://127.0.0.1:%d/healthz", port)})
	}
	port, err := freePort()
	if err != nil {
		return err
	}
	args := append([]string{
		"--kubeconfig=" + path,
		"--controllers=" + opts.Controllers,
		// One copy per test environment: nothing to elect, and no Lease to wait for.
		"--leader-elect=false",
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(port),
	}, opts.Args...)
	kcm, err := p.spawn("kcm-rs", exec.Command(opts.Binary, args...), "$KCM_RS_BIN")
	if err != nil {
		return err
	}
	// /readyz, not /healthz: kcm-rs is ready once its informers have synced, so objects a test
	// creates right after Start are seen by the first list rather than a later watch event.
	checks = append(checks, health{kcm, fmt.Sprintf("https://127.0.0.1:%d/readyz", port)})

	if opts.KwokBinary != "" {
		clientset, err := kubernetes.NewForConfig(env.Config)
		if err != nil {
			return err
		}
		if err := registerNode(ctx, clientset); err != nil {
			return fmt.Errorf("kcmrs: registering node %s: %w", NodeName, err)
		}
	}
	for _, h := range checks {
		if err := waitHealthy(ctx, h); err != nil {
			return err
		}
	}
	return nil
}

// startKwok runs KWOK for every node, with its health endpoint on a free port.
func (p *Process) startKwok(kubeconfig string, opts Options) (health, error) {
	// A working directory of its own, so that a ~/.kwok/kwok.yaml of the user's is not read.
	work := filepath.Join(p.dir, "kwok")
	if err := os.MkdirAll(work, 0o755); err != nil {
		return health{}, err
	}
	port, err := freePort()
	if err != nil {
		return health{}, err
	}
	cmd := exec.Command(opts.KwokBinary, "--kubeconfig="+kubeconfig, "--config="+opts.KwokConfig,
		"--manage-all-nodes=true", "--server-address=127.0.0.1:"+strconv.Itoa(port))
	cmd.Env = append(os.Environ(), "KWOK_WORKDIR="+work)
	pr, err := p.spawn("kwok", cmd, "$KWOK_BIN")
	if err != nil {
		return health{}, err
	}
	return health{pr, fmt.Sprintf("http://127.0.0.1:%d/healthz", port)}, nil
}

// registerNode creates the fake node KWOK keeps Ready, with room for far more pods than a test
// makes. An existing one is kept, so that a second Start on the same environment works.
func registerNode(ctx context.Context, c kubernetes.Interface) error {
	room := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("1000"),
		corev1.ResourceMemory: resource.MustParse("1Ti"),
		corev1.ResourcePods:   resource.MustParse("1000"),
	}
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        NodeName,
			Annotations: map[string]string{"kwok.x-k8s.io/node": "fake"},
			// The labels a kubelet sets, which real manifests' node selectors and affinities name.
			Labels: map[string]string{
				"kubernetes.io/hostname": NodeName,
				"kubernetes.io/os":       "linux",
				"kubernetes.io/arch":     "amd64",
				"type":                   "kwok",
			},
		},
		Status: corev1.NodeStatus{Capacity: room, Allocatable: room},
	}
	_, err := c.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	// The API server taints every new node not-ready (admission plugin TaintNodesByCondition), and
	// KCM's node lifecycle controller, which kcm-rs does not have, lifts it once the node is Ready;
	// until then kube-scheduler binds nothing to it. KWOK keeps the node Ready, so lift it here. A
	// merge patch, because KWOK may already be writing the node's status.
	_, err = c.CoreV1().Nodes().Patch(ctx, NodeName, types.MergePatchType,
		[]byte(`{"spec":{"taints":null}}`), metav1.PatchOptions{})
	return err
}

// spawn starts cmd with its output prefixed by name; envVar names where its binary came from, for
// the error when it cannot be started.
func (p *Process) spawn(name string, cmd *exec.Cmd, envVar string) (*proc, error) {
	pw := &prefixWriter{prefix: []byte("[" + name + "] "), out: p.out}
	cmd.Stdout, cmd.Stderr = pw, pw
	// Wait returns this long after the process exits even if something it started still holds
	// the output pipe.
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("kcmrs: starting %s (set %s or Options): %w", name, envVar, err)
	}
	pr := &proc{name: name, cmd: cmd, done: make(chan struct{})}
	go func() { pr.err = cmd.Wait(); pw.flush(); close(pr.done) }()
	p.procs = append(p.procs, pr)
	return pr, nil
}

// waitHealthy polls h.url until 200, the process exits, or readyTimeout passes. The servers'
// certificates are self-signed, and the health paths need no credentials (always-allowed, as in
// KCM and kube-scheduler).
func waitHealthy(ctx context.Context, h health) error {
	client := &http.Client{
		Timeout:   2 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}},
	}
	defer client.CloseIdleConnections()
	deadline := time.Now().Add(readyTimeout)
	for {
		resp, err := client.Get(h.url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("kcmrs: %s: %s did not answer 200 within %s", h.proc.name, h.url, readyTimeout)
		}
		select {
		case <-h.proc.done:
			return fmt.Errorf("kcmrs: %s exited before it was ready (%v); its output is above", h.proc.name, h.proc.err)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Stop stops every process Start started, last first (SIGTERM, then SIGKILL after stopGrace),
// and removes their files. Safe to call twice.
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

// freePort asks the kernel for a port that is free now; another process could take it before the
// server binds it, which on a test machine is rare enough.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// lockedWriter serialises whole lines from several processes, so that theirs do not interleave
// mid-line.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

// prefixWriter writes complete lines to out with prefix in front, keeping a partial line until
// its end arrives (or flush).
type prefixWriter struct {
	prefix []byte
	out    io.Writer
	mu     sync.Mutex
	buf    []byte
}

func (w *prefixWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, b...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			break
		}
		w.emit(w.buf[:i+1])
		w.buf = w.buf[i+1:]
	}
	return len(b), nil
}

func (w *prefixWriter) flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.buf) > 0 {
		w.emit(append(w.buf, '\n'))
		w.buf = nil
	}
}

// emit drops a line out cannot take: a lost log line is better than a child blocked on its pipe.
func (w *prefixWriter) emit(line []byte) {
	_, _ = w.out.Write(append(append([]byte(nil), w.prefix...), line...))
}
