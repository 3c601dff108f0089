package state

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"
	"unicode"

	"github.com/ralphd/ralphd/internal/atomicfile"
)

// FleetFile is where a daemon on a fleet tracker (fleet planning, package
// modes, fleet.go) records who it last saw holding the planner lease, for
// `ralphd status` and the dashboard. Only the daemon writes it, always by
// a rename; it counts only while the ralphd that wrote it holds the
// project lock.
const FleetFile = "fleet.json"

// fleetFileVersion is the version of FleetFile's format.
const fleetFileVersion = 1

// FleetStatus is who plans on the tracker this daemon shares with others,
// as the daemon last saw it. Its JSON form is the "fleet" object of
// `ralphd status --json`: keys may be added, never renamed or removed.
type FleetStatus struct {
	// Lease is the planner lease's issue id.
	Lease string `json:"lease"`
	// Planner is the bd actor holding the lease,
	// ralphd/<host>/<clone>/planner; "" when nobody plans.
	Planner string `json:"planner"`
	// PlannerHost and PlannerClone are the host and clone Planner names
	// ("" when nobody plans, or when an actor is not ralphd's shape).
	PlannerHost  string `json:"planner_host"`
	PlannerClone string `json:"planner_clone"`
	// ThisClone says the planner is this daemon.
	ThisClone bool `json:"this_clone"`
	// Since is when the daemon first saw Planner hold the lease (or saw
	// the lease free).
	Since time.Time `json:"since"`
}

// fleetFile is FleetFile's content: the status and the PID and planner
// actor of the daemon that wrote it.
type fleetFile struct {
	Version int       `json:"version"`
	PID     int       `json:"pid"`
	Self    string    `json:"self"` // this clone's planner actor
	Lease   string    `json:"lease"`
	Planner string    `json:"planner"`
	Since   time.Time `json:"since"`
}

// WriteFleet records, atomically, that the daemon (this process, whose
// planner actor is self) saw planner hold lease from since on ("" nobody).
func (s *Store) WriteFleet(self, lease, planner string, since time.Time) error {
	data, err := json.MarshalIndent(fleetFile{Version: fleetFileVersion, PID: os.Getpid(), Self: self, Lease: lease, Planner: planner, Since: since.UTC()}, "", "  ")
	if err != nil {
		return fmt.Errorf("write fleet status: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.writeFile(FleetFile, append(data, '\n')); err != nil {
		return fmt.Errorf("write fleet status: %w", err)
	}
	return nil
}

// ClearFleet removes the fleet status, as a daemon does when it stops. A
// missing file is not an error.
func (s *Store) ClearFleet() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.drop(FleetFile); err != nil {
		return fmt.Errorf("clear fleet status: %w", err)
	}
	return nil
}

// Fleet returns the fleet status of the daemon holding the project lock,
// or nil when there is none (no daemon runs, it is not on a fleet
// tracker, or the file is another ralphd's). note says why a file that
// exists is not used.
func (s *Store) Fleet() (st *FleetStatus, note string) {
	holder, err := lockHolderIn(s.root, LockFile)
	if err != nil {
		return nil, err.Error()
	}
	return readFleetIn(s.root, holder)
}

// readFleetIn reads FleetFile in d and returns its status when lock's
// holder wrote it (after it took the lock: a recycled PID), else nil and,
// for a file that exists, why it is not shown.
func readFleetIn(d *atomicfile.Dir, lock *LockInfo) (*FleetStatus, string) {
	data, err := readIn(d, FleetFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, ""
	}
	if err != nil {
		return nil, fmt.Sprintf("%s could not be read (%v); who plans is not shown", FleetFile, err)
	}
	f, err := parseFleetFile(data)
	if err != nil {
		return nil, fmt.Sprintf("%s is not a fleet status ralphd wrote (%v); who plans is not shown", FleetFile, err)
	}
	if lock == nil || lock.PID != f.PID || f.Since.Before(lock.Since.Add(-time.Second)) {
		return nil, fmt.Sprintf("%s was left by a ralphd (PID %d) that is no longer running; who plans is not shown", FleetFile, f.PID)
	}
	st := &FleetStatus{Lease: f.Lease, Planner: f.Planner, ThisClone: f.Planner != "" && f.Planner == f.Self, Since: f.Since}
	st.PlannerHost, st.PlannerClone = splitActor(f.Planner)
	return st, ""
}

// parseFleetFile parses FleetFile. It refuses what ralphd did not write:
// not one JSON object, another version, a PID that is not positive, no
// time, or a field holding control characters (an agent that rewrote the
// file must not drive the terminal `ralphd status` prints to).
func parseFleetFile(data []byte) (fleetFile, error) {
	f, err := parseObject[fleetFile]("fleet status", data)
	if err != nil {
		return fleetFile{}, err
	}
	switch {
	case f.Version != fleetFileVersion:
		return fleetFile{}, fmt.Errorf("parse fleet status: version %d, want %d", f.Version, fleetFileVersion)
	case f.PID <= 0:
		return fleetFile{}, fmt.Errorf("parse fleet status: pid %d is not a process id", f.PID)
	case f.Since.IsZero():
		return fleetFile{}, errors.New("parse fleet status: no time")
	case f.Lease == "":
		return fleetFile{}, errors.New("parse fleet status: no lease")
	}
	for _, s := range []string{f.Self, f.Lease, f.Planner} {
		if len(s) > 512 || strings.ContainsFunc(s, func(r rune) bool {
			return unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) || r == '\uFFFD'
		}) {
			return fleetFile{}, fmt.Errorf("parse fleet status: control characters or too long: %q", s)
		}
	}
	return f, nil
}

// splitActor returns the host and clone of a ralphd actor,
// ralphd/<host>/<clone>/<role>; "" for any other shape.
func splitActor(actor string) (host, clone string) {
	parts := strings.Split(actor, "/")
	if len(parts) != 4 || parts[0] != "ralphd" {
		return "", ""
	}
	return parts[1], parts[2]
}

// Describe says who plans, for a person: "nobody plans (lease t-2, since
// …)", or the planner's host and clone, this daemon or another, and since
// when.
func (f FleetStatus) Describe() string {
	if f.Planner == "" {
		return fmt.Sprintf("nobody plans (lease %s free since %s)", f.Lease, fmtTime(f.Since))
	}
	who := f.Planner
	if f.PlannerHost != "" {
		who = fmt.Sprintf("clone %s on host %s", f.PlannerClone, f.PlannerHost)
	}
	if f.ThisClone {
		return fmt.Sprintf("this ralphd (%s) plans, holding lease %s since %s", who, f.Lease, fmtTime(f.Since))
	}
	return fmt.Sprintf("another ralphd plans: %s, seen holding lease %s since %s", who, f.Lease, fmtTime(f.Since))
}
