// Command kindcheck reads a kind cluster configuration the way `kind create cluster --config` does
// and writes the kubeadm configuration kind would hand to `kubeadm init` on the first control-plane
// node, so that hack/recipes.sh can give it to the pinned kubeadm. It stops where kind would start
// containers.
//
// It uses kind's own loader, validation, kubeadm template and patching, which are internal packages
// of sigs.k8s.io/kind: hack/recipes.sh therefore builds it inside a copy of the pinned kind module.
// The values kind reads from a running node (its address, the Kubernetes version of its image) are
// fixed here to plausible ones; nothing this repository configures depends on them.
//
// Usage: kindcheck CONFIG OUT
// Prints each extraMount of the control-plane node as "hostPath<TAB>containerPath" (hostPath as
// written, relative paths are resolved by kind against the working directory).
package main

import (
	"fmt"
	"os"
	"strings"

	"sigs.k8s.io/kind/pkg/cluster/internal/kubeadm"
	"sigs.k8s.io/kind/pkg/internal/apis/config"
	"sigs.k8s.io/kind/pkg/internal/apis/config/encoding"
	"sigs.k8s.io/kind/pkg/internal/patch"
)

func main() {
	if len(os.Args) != 4 {
		fmt.Fprintln(os.Stderr, "usage: kindcheck CONFIG KUBERNETES_VERSION OUT")
		os.Exit(2)
	}
	if err := run(os.Args[1], os.Args[2], os.Args[3]); err != nil {
		fmt.Fprintf(os.Stderr, "kindcheck: %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}

func run(path, version, out string) error {
	cfg, err := encoding.Load(path)
	if err != nil {
		return err
	}
	// `kind create cluster` names the cluster "kind" unless --name or the file says otherwise.
	if cfg.Name == "" {
		cfg.Name = "kind"
	}
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("kind rejects it: %w", err)
	}
	var node *config.Node
	for i := range cfg.Nodes {
		if cfg.Nodes[i].Role == config.ControlPlaneRole {
			node = &cfg.Nodes[i]
			break
		}
	}
	if node == nil {
		return fmt.Errorf("no control-plane node")
	}
	data := kubeadm.ConfigData{
		NodeProvider:         "docker",
		ClusterName:          cfg.Name,
		KubernetesVersion:    version,
		ControlPlaneEndpoint: cfg.Name + "-control-plane:6443",
		APIBindPort:          6443,
		APIServerAddress:     cfg.Networking.APIServerAddress,
		Token:                kubeadm.Token,
		PodSubnet:            cfg.Networking.PodSubnet,
		KubeProxyMode:        string(cfg.Networking.KubeProxyMode),
		ServiceSubnet:        cfg.Networking.ServiceSubnet,
		ControlPlane:         true,
		IPFamily:             cfg.Networking.IPFamily,
		FeatureGates:         cfg.FeatureGates,
		RuntimeConfig:        cfg.RuntimeConfig,
		NodeName:             cfg.Name + "-control-plane",
		NodeAddress:          "172.18.0.2",
	}
	generated, err := kubeadm.Config(data)
	if err != nil {
		return fmt.Errorf("kubeadm template: %w", err)
	}
	// Cluster-wide patches first, then the node's, as kind applies them.
	patched, err := patch.KubeYAML(generated, cfg.KubeadmConfigPatches, cfg.KubeadmConfigPatchesJSON6902)
	if err != nil {
		return fmt.Errorf("cluster kubeadmConfigPatches: %w", err)
	}
	patched, err = patch.KubeYAML(patched, node.KubeadmConfigPatches, node.KubeadmConfigPatchesJSON6902)
	if err != nil {
		return fmt.Errorf("node kubeadmConfigPatches: %w", err)
	}
	// kind names every document "config" for matching patches and strips the name before kubeadm
	// reads the file, which would reject it.
	patched = strings.ReplaceAll(patched, "metadata:\n  name: config\n", "")
	if err := os.WriteFile(out, []byte(patched), 0o644); err != nil {
		return err
	}
	for _, m := range node.ExtraMounts {
		fmt.Printf("%s\t%s\n", m.HostPath, m.ContainerPath)
	}
	return nil
}
