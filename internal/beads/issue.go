package beads

import "time"

// Status values bd 1.0.5 knows (see `bd statuses --json`).
const (
	StatusOpen       = "open"
	StatusInProgress = "in_progress"
	StatusBlocked    = "blocked"
	StatusDeferred   = "deferred"
	StatusClosed     = "closed"
	StatusPinned     = "pinned"
	StatusHooked     = "hooked"
)

// TypeEpic is the issue type of an epic: bd refuses to close one while a
// child of it is open.
const TypeEpic = "epic"

// Dependency type values. DepBlocks is the only type that keeps an issue
// out of `bd ready`.
const (
	DepBlocks      = "blocks"
	DepParentChild = "parent-child"
)

// Issue is one beads issue, with every field ralphd reads. Field names follow
// bd 1.0.5's JSON output as recorded in the contract fixtures. Fields bd
// omits when empty are zero here.
type Issue struct {
	ID                 string
	Title              string
	Description        string
	Design             string
	AcceptanceCriteria string
	Notes              string
	Status             string
	Priority           int
	IssueType          string
	Assignee           string
	Owner              string
	CreatedBy          string
	CloseReason        string
	Parent             string // `parent` in list/ready items; else the target of a parent-child dependency
	ExternalRef        string
	EstimatedMinutes   int // 0 when bd prints none
	Labels             []string

	// Extra holds the issue's other top-level fields, the ones Issue has
	// no Go field for, by bd's JSON name: a string as its value, any other
	// value as compact JSON text. bd omits most of them when empty, so it
	// is nil for most issues. It lets a caller read a field of bd's that
	// this package does not model (such as spec_id) without a new Go
	// field; a null reads as absent.
	Extra map[string]string `json:",omitempty"`

	// Comments are filled only by callers that read them (Client.Comments);
	// list and ready print just CommentCount.
	Comments []Comment

	// Dependencies are the issues this one depends on. bd prints them as raw
	// edges in `list`/`ready` and as full issue objects in `show`; both are
	// normalised to edges here.
	Dependencies []Dependency

	DependencyCount int
	DependentCount  int
	CommentCount    int
	BlockedBy       []string // only in `blocked` items

	CreatedAt  time.Time
	UpdatedAt  time.Time
	StartedAt  time.Time
	ClosedAt   time.Time
	DeferUntil time.Time
	DueAt      time.Time
}

// Comment is one comment on an issue, as `bd comments <id> --json` prints it.
type Comment struct {
	ID        string
	Author    string
	Text      string
	CreatedAt time.Time
}

// Dependency is one edge: IssueID depends on DependsOnID. In the `blocks`
// type that means DependsOnID blocks IssueID.
type Dependency struct {
	IssueID     string
	DependsOnID string
	Type        string
	// DependsOnStatus is the status of DependsOnID when bd reported it
	// (`show` does; `list` does not).
	DependsOnStatus string
	// CreatedBy is the bd actor who added the dependency, when bd reported
	// it (`list` and `ready` edges do; `show` does not).
	CreatedBy string
}

// HasLabel reports whether the issue carries label l.
func (i Issue) HasLabel(l string) bool {
	for _, x := range i.Labels {
		if x == l {
			return true
		}
	}
	return false
}

// DependsOn reports whether the issue has the dependency edge d: the same
// issue depended on, with the same type.
func (i Issue) DependsOn(d Dependency) bool {
	for _, x := range i.Dependencies {
		if x.DependsOnID == d.DependsOnID && x.Type == d.Type {
			return true
		}
	}
	return false
}

// Stats is the summary `bd stats --json` prints.
type Stats struct {
	Total      int
	Open       int
	InProgress int
	Blocked    int
	Closed     int
	Deferred   int
	Ready      int
}
