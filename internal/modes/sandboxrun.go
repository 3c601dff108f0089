package modes

import (
	"context"
	"fmt"
)

// sandboxRun is a BUILD sandbox made ready for one run: the agent's, or
// a session of checks that run the agent's code. Both get the same
// layout and the same network from enterSandbox, so a check has no more
// power than the agent whose code it runs.
type sandboxRun struct {
	// wrap puts bwrap in front of a command line (agent.RunOptions.Wrap).
	wrap func(path string, argv []string) (string, []string)
	// tmpdir is the TMPDIR entry for the run's environment: a dir in its
	// scratch dir, as the private /tmp hides the host's.
	tmpdir string
	// stop ends the network proxy; call it once the run has ended.
	stop func()
}

// enterSandbox readies the BUILD sandbox for a run whose scratch dir is
// scratch: its network (sandboxNet: the allowlist proxy, unless
// network=open) and its layout (sandboxWrap: the work tree and scratch
// writable, the tracker, .ralph/, git's config and hooks and the state
// dir read-only, the home dir read-only but for the agent CLI's own dirs,
// /tmp and /run private). gitDir and common are the work tree's git dirs
// when the caller has them ("" to look them up); readOnly are more paths
// the run must not write (the guard's client and socket). refused is told
// each host the network proxy refuses, once per host.
func (l *Loop) enterSandbox(ctx context.Context, scratch, gitDir, common string, refused func(host string), readOnly ...string) (sandboxRun, error) {
	net, stop, err := l.sandboxNet(scratch, refused)
	if err != nil {
		return sandboxRun{}, fmt.Errorf("network: %w", err)
	}
	wrap, tmpdir, err := l.sandboxWrap(ctx, scratch, gitDir, common, net, readOnly...)
	if err != nil {
		stop()
		return sandboxRun{}, err
	}
	return sandboxRun{wrap: wrap, tmpdir: tmpdir, stop: stop}, nil
}
