//go:build !unix

package beads

import "os/exec"

// setProcessGroup leaves cmd alone where process groups do not exist;
// cancellation kills bd itself.
func setProcessGroup(cmd *exec.Cmd) {}
