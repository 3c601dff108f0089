//go:build linux

// A cgroup Group contains an agent's processes in a cgroup v2 of their
// own, so that ending an iteration ends every process it started, however
// it detached (setsid, a double fork, a scrubbed environment): a process
// cannot leave its cgroup by forking, and cgroup.kill ends them all at
// once.
//
// ralphd creates one child cgroup per iteration under its own cgroup
// (Find), starts the agent directly inside it (clone into the cgroup, so
// not even its first fork can escape), and starts a reaper process that
// outlives ralphd: if ralphd is killed, the reaper ends the iteration's
// cgroup within the stop grace (see Reaper). Where no writable cgroup v2 is
// available (Find fails), callers fall back to process groups and a child
// subreaper, and should say so.

package proc

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Prefix starts the name of every cgroup ralphd creates.
const Prefix = "ralphd-"

// Parent is a cgroup v2 directory in which ralphd can create children
// and start processes in them: ralphd's own cgroup.
type Parent struct {
	Dir string
}

// Find returns ralphd's own cgroup when it is on a writable cgroup v2
// hierarchy (a unified or hybrid layout, or a systemd unit with
// Delegate=yes) where a process can be started inside a new child. The
// error says why not, for the fallback's message.
func Find() (Parent, error) {
	mounts, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return Parent{}, fmt.Errorf("find cgroup v2: %w", err)
	}
	self, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return Parent{}, fmt.Errorf("find cgroup v2: %w", err)
	}
	dir, err := ownDir(mounts, self)
	if err != nil {
		return Parent{}, err
	}
	p := Parent{Dir: dir}
	if err := p.probe(); err != nil {
		return Parent{}, fmt.Errorf("cgroup v2 at %s is not usable: %w", dir, err)
	}
	return p, nil
}

// ownDir finds the directory of our cgroup v2 from /proc/self/mountinfo
// and /proc/self/cgroup.
func ownDir(mountinfo, cgroup []byte) (string, error) {
	var rel string
	found := false
	for line := range bytes.Lines(cgroup) {
		if p, ok := bytes.CutPrefix(bytes.TrimRight(line, "\n"), []byte("0::")); ok {
			rel, found = string(p), true
		}
	}
	if !found {
		return "", errors.New("no cgroup v2: /proc/self/cgroup has no unified (0::) entry")
	}
	rel = strings.TrimSuffix(rel, " (deleted)")
	for line := range bytes.Lines(mountinfo) {
		// id parent major:minor root mountpoint options [optional...] - fstype source superopts
		f := strings.Fields(string(line))
		sep := -1
		for i, x := range f {
			if x == "-" {
				sep = i
				break
			}
		}
		if sep < 5 || sep+1 >= len(f) || f[sep+1] != "cgroup2" {
			continue
		}
		root, mnt := unescape(f[3]), unescape(f[4])
		// A mount shows the part of the hierarchy under root; our cgroup
		// must be in it.
		sub, ok := under(rel, root)
		if !ok {
			continue
		}
		return filepath.Join(mnt, sub), nil
	}
	return "", fmt.Errorf("no cgroup v2 mount shows our cgroup %s", rel)
}

// under returns p relative to root when p is root or below it.
func under(p, root string) (string, bool) {
	if root == "/" {
		return p, true
	}
	if p == root {
		return "/", true
	}
	if rest, ok := strings.CutPrefix(p, root+"/"); ok {
		return "/" + rest, true
	}
	return "", false
}

// unescape undoes mountinfo's octal escapes (\040 for a space).
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// probe creates a child, starts a process inside it the way Start
// does, and removes it again.
func (p Parent) probe() error {
	g, err := p.New("probe")
	if err != nil {
		return err
	}
	defer g.Remove()
	bin, err := exec.LookPath("true")
	if err != nil {
		bin = "/bin/true"
	}
	attr := &syscall.ProcAttr{Sys: &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: g.FD()}}
	pid, err := syscall.ForkExec(bin, []string{"true"}, attr)
	if err != nil {
		return fmt.Errorf("start a process inside a new cgroup: %w", err)
	}
	var ws syscall.WaitStatus
	_, _ = syscall.Wait4(pid, &ws, 0, nil)
	return nil
}

// Group is one iteration's cgroup.
type Group struct {
	// Path is the cgroup's directory.
	Path string
	dir  *os.File
}

// New creates a child cgroup of p named Prefix plus our pid, our start
// time and name, so that a later ralphd can tell whether its owner still
// runs (see Sweep).
func (p Parent) New(name string) (*Group, error) {
	start, err := startTime(os.Getpid())
	if err != nil {
		return nil, err
	}
	path := filepath.Join(p.Dir, fmt.Sprintf("%s%d-%d-%s", Prefix, os.Getpid(), start, name))
	if err := os.Mkdir(path, 0o755); err != nil {
		return nil, fmt.Errorf("create cgroup: %w", err)
	}
	d, err := os.Open(path)
	if err != nil {
		_ = os.Remove(path)
		return nil, fmt.Errorf("open cgroup: %w", err)
	}
	return &Group{Path: path, dir: d}, nil
}

// Open returns the existing cgroup at path.
func Open(path string) (*Group, error) {
	d, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open cgroup: %w", err)
	}
	return &Group{Path: path, dir: d}, nil
}

// FD is the cgroup directory's descriptor, for SysProcAttr.CgroupFD.
func (g *Group) FD() int { return int(g.dir.Fd()) }

// PIDs returns the processes in the cgroup.
func (g *Group) PIDs() ([]int, error) {
	data, err := os.ReadFile(filepath.Join(g.Path, "cgroup.procs"))
	if err != nil {
		return nil, fmt.Errorf("list the processes of cgroup %s: %w", g.Path, err)
	}
	var pids []int
	for f := range strings.FieldsSeq(string(data)) {
		if pid, err := strconv.Atoi(f); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}

// Empty reports whether no process is left in the cgroup. A cgroup that
// is gone is empty.
func (g *Group) Empty() bool {
	pids, err := g.PIDs()
	if errors.Is(err, fs.ErrNotExist) {
		return true
	}
	return err == nil && len(pids) == 0
}

// Signal sends sig to every process in the cgroup.
func (g *Group) Signal(sig syscall.Signal) {
	pids, _ := g.PIDs()
	for _, pid := range pids {
		_ = unix.Kill(pid, sig)
	}
}

// Kill ends every process in the cgroup with SIGKILL at once through
// cgroup.kill (Linux 5.14 and later); on older kernels it freezes the
// cgroup so that nothing can fork, kills each process and thaws it.
func (g *Group) Kill() error {
	if err := os.WriteFile(filepath.Join(g.Path, "cgroup.kill"), []byte("1"), 0); err == nil {
		return nil
	}
	freeze := filepath.Join(g.Path, "cgroup.freeze")
	frozen := os.WriteFile(freeze, []byte("1"), 0) == nil
	g.Signal(syscall.SIGKILL)
	if frozen {
		_ = os.WriteFile(freeze, []byte("0"), 0)
	}
	if g.Empty() {
		return nil
	}
	return fmt.Errorf("kill the processes of cgroup %s: some are left", g.Path)
}

// End ends the cgroup's processes: SIGTERM to each, a wait until
// graceEnd for them to exit, then Kill and a wait of at most killWait for
// the cgroup to empty. It returns how many processes were left.
func (g *Group) End(graceEnd time.Time, killWait time.Duration) int {
	if g.Empty() {
		return 0
	}
	g.Signal(syscall.SIGTERM)
	for n := 0; time.Now().Before(graceEnd); n++ {
		if g.Empty() {
			return 0
		}
		time.Sleep(pollWait(n))
	}
	deadline := time.Now().Add(killWait)
	for n := 0; ; n++ {
		_ = g.Kill()
		if g.Empty() {
			return 0
		}
		if time.Now().After(deadline) {
			pids, _ := g.PIDs()
			return len(pids)
		}
		time.Sleep(pollWait(n))
	}
}

// pollWait is how long End waits before its look number n+1 at a cgroup
// that is emptying: 1 ms at first, doubling up to pollInterval. What is
// left right after an agent's leader exited (bwrap's init, processes the
// kernel is still tearing down) is usually gone within a few
// milliseconds, and a first wait of the whole interval cost each
// iteration about that much.
func pollWait(n int) time.Duration {
	return min(time.Millisecond<<min(n, 5), pollInterval)
}

// Remove closes the cgroup and removes its directory, which the kernel
// allows only once it is empty.
func (g *Group) Remove() error {
	_ = g.dir.Close()
	if err := os.Remove(g.Path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove cgroup %s: %w", g.Path, err)
	}
	return nil
}

// pollInterval is how often End and the reaper look at a cgroup.
const pollInterval = 20 * time.Millisecond

// Sweep ends and removes the cgroups under p that a ralphd which no
// longer runs left behind (a ralphd killed together with its reaper),
// and returns their paths. The cgroups of a ralphd that runs are left
// alone.
func Sweep(p Parent, killWait time.Duration) []string {
	ents, err := os.ReadDir(p.Dir)
	if err != nil {
		return nil
	}
	var swept []string
	for _, e := range ents {
		pid, start, ok := owner(e.Name())
		if !e.IsDir() || !ok {
			continue
		}
		if st, err := startTime(pid); err == nil && st == start {
			continue // its ralphd still runs
		}
		g, err := Open(filepath.Join(p.Dir, e.Name()))
		if err != nil {
			continue
		}
		g.End(time.Now(), killWait)
		if g.Remove() == nil {
			swept = append(swept, g.Path)
		}
	}
	return swept
}

// owner parses the pid and start time out of a cgroup name New made.
func owner(name string) (pid int, start uint64, ok bool) {
	rest, ok := strings.CutPrefix(name, Prefix)
	if !ok {
		return 0, 0, false
	}
	f := strings.SplitN(rest, "-", 3)
	if len(f) < 3 {
		return 0, 0, false
	}
	pid, err1 := strconv.Atoi(f[0])
	start, err2 := strconv.ParseUint(f[1], 10, 64)
	return pid, start, err1 == nil && err2 == nil && pid > 0
}

// startTime is the process's start time in clock ticks after boot
// (proc.Stat.StartTime), which with the pid names a process across pid
// reuse.
func startTime(pid int) (uint64, error) {
	st, err := ReadStat(pid)
	return st.StartTime, err
}
