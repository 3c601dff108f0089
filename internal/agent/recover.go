package agent

import (
	"os"
	"time"

	"github.com/ralphd/ralphd/internal/proc"
)

// EndRecorded ends whatever is left of an agent tree recorded (through
// RunOptions.OnStart) by an earlier ralphd process that died without
// cleaning up, for the cold-start sweep. It never touches a process that
// merely reuses a recorded id:
//
//   - the recorded process group is signalled as a whole only if its
//     leader is still alive with the recorded start time;
//   - otherwise only processes carrying rec.Marker in their environment
//     are ended (a recycled pid or pgid belongs to a process without it);
//   - processes started before rec.StartTime are never considered.
//
// Like Run, it sends SIGTERM, waits up to grace, then sends SIGKILL. It
// returns how many processes were still running at the end.
func EndRecorded(rec Started, grace time.Duration) int {
	q := treeQuery{
		Token:    rec.Marker,
		MinStart: rec.StartTime,
		Self:     os.Getpid(),
		SelfSID:  proc.SelfSID(),
	}
	if rec.PGID > 0 && rec.StartTime != 0 && proc.Alive(rec.PGID, rec.StartTime) {
		q.PGID = rec.PGID
	}
	if q.PGID == 0 && q.Token == "" {
		return 0
	}
	return endTree(q, time.Now().Add(grace))
}
