package standin

import (
	"bytes"
	"encoding/json"
	"sort"
	"time"
)

// issue is one stored issue. Timestamps are stored rounded to whole
// seconds, as bd's Dolt DATETIME columns keep them.
type issue struct {
	ID                 string          `json:"id"`
	Title              string          `json:"title"`
	Description        string          `json:"description,omitempty"`
	Design             string          `json:"design,omitempty"`
	AcceptanceCriteria string          `json:"acceptance_criteria,omitempty"`
	Notes              string          `json:"notes,omitempty"`
	SpecID             string          `json:"spec_id,omitempty"`
	Status             string          `json:"status"`
	Priority           int             `json:"priority"`
	IssueType          string          `json:"issue_type"`
	Assignee           string          `json:"assignee,omitempty"`
	Owner              string          `json:"owner,omitempty"`
	EstimatedMinutes   *int            `json:"estimated_minutes,omitempty"`
	CreatedAt          time.Time       `json:"created_at"`
	CreatedBy          string          `json:"created_by,omitempty"`
	UpdatedAt          time.Time       `json:"updated_at"`
	StartedAt          *time.Time      `json:"started_at,omitempty"`
	ClosedAt           *time.Time      `json:"closed_at,omitempty"`
	CloseReason        string          `json:"close_reason,omitempty"`
	ClosedBySession    string          `json:"closed_by_session,omitempty"`
	DueAt              *time.Time      `json:"due_at,omitempty"`
	DeferUntil         *time.Time      `json:"defer_until,omitempty"`
	ExternalRef        string          `json:"external_ref,omitempty"`
	Metadata           json.RawMessage `json:"metadata,omitempty"`
	Labels             []string        `json:"labels,omitempty"`
}

// dep is one dependency edge: IssueID depends on DependsOnID.
type dep struct {
	IssueID     string    `json:"issue_id"`
	DependsOnID string    `json:"depends_on_id"`
	Type        string    `json:"type"`
	CreatedAt   time.Time `json:"created_at"`
	CreatedBy   string    `json:"created_by"`
}

// comment is one comment on an issue.
type comment struct {
	ID        string    `json:"id"`
	IssueID   string    `json:"issue_id"`
	Author    string    `json:"author"`
	Text      string    `json:"text"`
	CreatedAt time.Time `json:"created_at"`
}

// database is everything the stand-in stores for one beads workspace.
type database struct {
	Version  int        `json:"version"`
	Prefix   string     `json:"prefix"`
	Issues   []*issue   `json:"issues"`
	Deps     []*dep     `json:"dependencies"`
	Comments []*comment `json:"comments"`

	byID map[string]*issue
}

// index rebuilds the id lookup table.
func (db *database) index() {
	db.byID = make(map[string]*issue, len(db.Issues))
	for _, is := range db.Issues {
		db.byID[is.ID] = is
	}
}

func (db *database) get(id string) *issue { return db.byID[id] }

func (db *database) add(is *issue) {
	db.Issues = append(db.Issues, is)
	db.byID[is.ID] = is
}

// depsOf returns the edges where id is the dependent, sorted by target.
func (db *database) depsOf(id string) []*dep {
	var out []*dep
	for _, d := range db.Deps {
		if d.IssueID == id {
			out = append(out, d)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].DependsOnID < out[j].DependsOnID })
	return out
}

// dependentsOf returns the edges pointing at id, sorted by dependent.
func (db *database) dependentsOf(id string) []*dep {
	var out []*dep
	for _, d := range db.Deps {
		if d.DependsOnID == id {
			out = append(out, d)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].IssueID < out[j].IssueID })
	return out
}

func (db *database) findDep(from, to string) *dep {
	for _, d := range db.Deps {
		if d.IssueID == from && d.DependsOnID == to {
			return d
		}
	}
	return nil
}

func (db *database) commentsOf(id string) []*comment {
	var out []*comment
	for _, c := range db.Comments {
		if c.IssueID == id {
			out = append(out, c)
		}
	}
	return out
}

// roundTime rounds to whole seconds in UTC, as bd's DATETIME storage does.
func roundTime(t time.Time) time.Time { return t.UTC().Round(time.Second) }

func roundPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	r := roundTime(*t)
	return &r
}

// kv is one key of an ordered JSON object.
type kv struct {
	k string
	v any
}

// obj is a JSON object that keeps its key order, so the stand-in can print
// keys in the order real bd's structs (or sorted maps) print them.
type obj []kv

// MarshalJSON implements json.Marshaler.
func (o obj) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, e := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := json.Marshal(e.k)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		v, err := json.Marshal(e.v)
		if err != nil {
			return nil, err
		}
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

func (o obj) add(k string, v any) obj { return append(o, kv{k, v}) }

// sorted returns a copy with keys in alphabetical order, as bd prints
// objects it built from a map.
func (o obj) sorted() obj {
	out := append(obj{}, o...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].k < out[j].k })
	return out
}

func (o obj) without(key string) obj {
	var out obj
	for _, e := range o {
		if e.k != key {
			out = append(out, e)
		}
	}
	return out
}

// baseObj renders the fields of bd's Issue struct, in its field order,
// dropping empty omitempty fields.
func baseObj(is *issue) obj {
	o := obj{{"id", is.ID}, {"title", is.Title}}
	str := func(k, v string) {
		if v != "" {
			o = append(o, kv{k, v})
		}
	}
	tm := func(k string, v *time.Time) {
		if v != nil {
			o = append(o, kv{k, *v})
		}
	}
	str("description", is.Description)
	str("design", is.Design)
	str("acceptance_criteria", is.AcceptanceCriteria)
	str("notes", is.Notes)
	str("spec_id", is.SpecID)
	str("status", is.Status)
	o = append(o, kv{"priority", is.Priority})
	str("issue_type", is.IssueType)
	str("assignee", is.Assignee)
	str("owner", is.Owner)
	if is.EstimatedMinutes != nil {
		o = append(o, kv{"estimated_minutes", *is.EstimatedMinutes})
	}
	o = append(o, kv{"created_at", is.CreatedAt})
	str("created_by", is.CreatedBy)
	o = append(o, kv{"updated_at", is.UpdatedAt})
	tm("started_at", is.StartedAt)
	tm("closed_at", is.ClosedAt)
	str("close_reason", is.CloseReason)
	str("closed_by_session", is.ClosedBySession)
	tm("due_at", is.DueAt)
	tm("defer_until", is.DeferUntil)
	str("external_ref", is.ExternalRef)
	if len(is.Metadata) > 0 {
		o = append(o, kv{"metadata", is.Metadata})
	}
	if len(is.Labels) > 0 {
		o = append(o, kv{"labels", append([]string{}, is.Labels...)})
	}
	return o
}

// edgeObj renders a raw dependency edge as `list`/`ready` print it.
func edgeObj(d *dep) obj {
	return obj{
		{"issue_id", d.IssueID},
		{"depends_on_id", d.DependsOnID},
		{"type", d.Type},
		{"created_at", d.CreatedAt},
		{"created_by", d.CreatedBy},
		{"metadata", "{}"},
	}
}

// commentObj renders a comment as `comments --json` prints it.
func commentObj(c *comment) obj {
	return obj{
		{"id", c.ID},
		{"issue_id", c.IssueID},
		{"author", c.Author},
		{"text", c.Text},
		{"created_at", c.CreatedAt},
	}
}

// blockingCounts returns the counts `list` and `ready` print: only
// `blocks` edges count there.
func (db *database) blockingCounts(id string) (deps, dependents int) {
	for _, d := range db.Deps {
		if d.Type != depBlocks {
			continue
		}
		if d.IssueID == id {
			deps++
		}
		if d.DependsOnID == id {
			dependents++
		}
	}
	return deps, dependents
}

// listObj renders an item of `ready`, `list` and (withComments) `export`.
func (db *database) listObj(is *issue, withComments bool) obj {
	o := baseObj(is)
	if edges := db.depsOf(is.ID); len(edges) > 0 {
		arr := make([]obj, len(edges))
		for i, d := range edges {
			arr[i] = edgeObj(d)
		}
		o = o.add("dependencies", arr)
	}
	cs := db.commentsOf(is.ID)
	if withComments && len(cs) > 0 {
		carr := make([]obj, len(cs))
		for i, c := range cs {
			carr[i] = commentObj(c)
		}
		o = o.add("comments", carr)
	}
	deps, dependents := db.blockingCounts(is.ID)
	o = o.add("dependency_count", deps).add("dependent_count", dependents).add("comment_count", len(cs))
	if p := db.parentOf(is.ID); p != "" {
		o = o.add("parent", p)
	}
	return o
}

// showObj renders an item of `show --json`.
func (db *database) showObj(is *issue, withComments, withDependents bool) obj {
	o := baseObj(is)
	edges := db.depsOf(is.ID)
	var arr []obj
	for _, d := range edges {
		if t := db.get(d.DependsOnID); t != nil {
			arr = append(arr, baseObj(t).add("dependency_type", d.Type))
		}
	}
	if len(arr) > 0 {
		o = o.add("dependencies", arr)
	}
	rev := db.dependentsOf(is.ID)
	if withDependents {
		var darr []obj
		for _, d := range rev {
			if t := db.get(d.IssueID); t != nil {
				darr = append(darr, baseObj(t).add("dependency_type", d.Type))
			}
		}
		if len(darr) > 0 {
			o = o.add("dependents", darr)
		}
	}
	cs := db.commentsOf(is.ID)
	if withComments && len(cs) > 0 {
		carr := make([]obj, len(cs))
		for i, c := range cs {
			carr[i] = commentObj(c)
		}
		o = o.add("comments", carr)
	}
	return o.add("dependent_count", len(rev)).add("dependency_count", len(edges)).add("comment_count", len(cs))
}
