// Command k3dcheck reads a k3d configuration file the way `k3d cluster create --config` does and
// prints what the k3s server nodes would get from it, so that hack/recipes.sh can check the recipe
// without a container engine. It stops where k3d would ask the runtime for networks and volumes
// (config.ValidateClusterConfig), the first step that needs Docker.
//
// It uses k3d's own public packages: the command line's loader (environment expansion and the JSON
// schema), then the simple configuration's processing and its transformation into nodes.
//
// Usage: k3dcheck CONFIG
// Prints, for the first server node, each k3s argument as "arg<TAB>value" and each file k3d copies
// into it as "file<TAB>destination<TAB>sha256 of the content".
package main

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"

	"github.com/spf13/viper"

	cliconfig "github.com/k3d-io/k3d/v5/cmd/util/config"
	"github.com/k3d-io/k3d/v5/pkg/config"
	"github.com/k3d-io/k3d/v5/pkg/runtimes"
	k3d "github.com/k3d-io/k3d/v5/pkg/types"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: k3dcheck CONFIG")
		os.Exit(2)
	}
	if err := run(os.Args[1]); err != nil {
		fmt.Fprintf(os.Stderr, "k3dcheck: %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}

func run(path string) error {
	v := viper.New()
	// Exits the process itself on a file that fails the schema, as the command line does.
	if err := cliconfig.InitViperWithConfigFile(v, path); err != nil {
		return err
	}
	simple, err := config.SimpleConfigFromViper(v)
	if err != nil {
		return err
	}
	if err := config.ProcessSimpleConfig(&simple); err != nil {
		return fmt.Errorf("processing: %w", err)
	}
	// The runtime is only named here: the transformation asks nothing of it for this configuration.
	cluster, err := config.TransformSimpleToClusterConfig(context.Background(), runtimes.Docker, simple, path)
	if err != nil {
		return fmt.Errorf("transforming: %w", err)
	}
	if cluster, err = config.ProcessClusterConfig(*cluster); err != nil {
		return fmt.Errorf("processing the cluster: %w", err)
	}
	for _, node := range cluster.Cluster.Nodes {
		if node.Role != k3d.ServerRole {
			continue
		}
		for _, arg := range node.Args {
			fmt.Printf("arg\t%s\n", arg)
		}
		for _, f := range node.Files {
			fmt.Printf("file\t%s\t%x\n", f.Destination, sha256.Sum256(f.Content))
		}
		return nil
	}
	return fmt.Errorf("no server node")
}
