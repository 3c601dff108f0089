package standin

import (
	"fmt"
	"math/rand/v2"
	"time"
)

// Mix describes a generated tracker: how many issues and what share of
// them is closed, epics, chained and commented.
type Mix struct {
	// Issues is how many issues to generate, epics included.
	Issues int
	// Open is how many of them stay open (the rest are closed); at least
	// one per epic's open child and chain link is kept open.
	Open int
	// Seed makes the tracker reproducible.
	Seed uint64
}

// Seeded is what Seed wrote.
type Seeded struct {
	Issues, Closed, Epics, Deps, Comments int
}

// Seed replaces the tracker in the workspace at dir (one `bd init` made)
// with a generated one of m.Issues issues written straight to the
// stand-in's store in one commit, as bd's own writes would leave it: most
// issues closed, epics with 5 to 20 children (parent-child links),
// chains of blocking dependencies among the open issues, and comments on
// about a fifth of the issues. Benchmarks use it to make a 5,000-issue
// tracker in well under a second, where 5,000 `bd create` calls would take
// minutes.
func Seed(dir string, m Mix) (Seeded, error) {
	var s Seeded
	if m.Issues < 1 || m.Open < 1 || m.Open > m.Issues {
		return s, fmt.Errorf("seed: want 1 ≤ open (%d) ≤ issues (%d)", m.Open, m.Issues)
	}
	ws, err := openWorkspace(dir)
	if err != nil {
		return s, fmt.Errorf("seed %s: %w; run bd init there first", dir, err)
	}
	db, err := ws.load()
	if err != nil {
		return s, fmt.Errorf("seed: %w", err)
	}
	rng := rand.New(rand.NewPCG(m.Seed, m.Seed^0x9e3779b97f4a7c15))
	// Issues were made over the last year, oldest first; the open ones
	// last, so that an open issue's id is never older than its blocker's.
	start := time.Now().UTC().Add(-365 * 24 * time.Hour).Truncate(time.Second)
	step := 365 * 24 * time.Hour / time.Duration(m.Issues+1)
	db.Issues, db.Deps, db.Comments = make([]*issue, 0, m.Issues), nil, nil
	var epic *issue
	children := 0
	// Ids are unique, as bd's are: a hash that collides with an earlier
	// issue's is made again with another nonce (five base-36 characters of
	// a hash collide often enough among thousands of issues).
	taken := map[string]bool{}
	for i := range m.Issues {
		created := start.Add(time.Duration(i) * step)
		open := i >= m.Issues-m.Open
		id := ""
		for nonce := i; id == "" || taken[id]; nonce += m.Issues {
			id = fmt.Sprintf("%s-%s", db.Prefix, hashID(fmt.Sprint("seed ", i), "", "seed", created, nonce, 5))
		}
		taken[id] = true
		is := &issue{
			ID:        id,
			Title:     fmt.Sprintf("Generated issue %d", i+1),
			Status:    "open",
			Priority:  rng.IntN(4),
			IssueType: []string{"task", "bug", "feature", "task", "chore"}[rng.IntN(5)],
			CreatedAt: created, CreatedBy: "seed", UpdatedAt: created,
			Description: "Generated for the benchmarks: a realistic mix of closed work, epics, dependency chains and comments.",
		}
		if !open {
			closed := created.Add(time.Duration(1+rng.IntN(72)) * time.Hour)
			is.Status, is.ClosedAt, is.CloseReason, is.UpdatedAt = "closed", &closed, "done", closed
			s.Closed++
		}
		// Every 15th issue opens an epic; the issues after it, up to 5 to
		// 20 of them, are its children.
		switch {
		case i%15 == 0:
			is.IssueType, is.Title = "epic", fmt.Sprintf("Generated epic %d", i+1)
			epic, children = is, 5+rng.IntN(16)
			s.Epics++
		case epic != nil && children > 0:
			db.Deps = append(db.Deps, &dep{IssueID: is.ID, DependsOnID: epic.ID, Type: depParentChild, CreatedAt: created, CreatedBy: "seed"})
			children--
		}
		// Open issues form chains of three: the second and third of each
		// are blocked by the one before, so a third of the open work is
		// ready.
		if open && (i-(m.Issues-m.Open))%3 != 0 {
			prev := db.Issues[len(db.Issues)-1]
			db.Deps = append(db.Deps, &dep{IssueID: is.ID, DependsOnID: prev.ID, Type: "blocks", CreatedAt: created, CreatedBy: "seed"})
		}
		if rng.IntN(5) == 0 {
			for c := range 1 + rng.IntN(3) {
				at := created.Add(time.Duration(c+1) * time.Minute)
				id, err := newUUIDv7(at, rng2reader{rng})
				if err != nil {
					return s, fmt.Errorf("seed: %w", err)
				}
				db.Comments = append(db.Comments, &comment{ID: id, IssueID: is.ID, Author: "seed", Text: fmt.Sprintf("Generated comment %d on issue %d.", c+1, i+1), CreatedAt: at})
			}
		}
		db.Issues = append(db.Issues, is)
	}
	db.index()
	if err := ws.commit(db, "seed"); err != nil {
		return s, fmt.Errorf("seed: %w", err)
	}
	s.Issues, s.Deps, s.Comments = len(db.Issues), len(db.Deps), len(db.Comments)
	return s, nil
}

// rng2reader reads random bytes from a math/rand source, for ids.
type rng2reader struct{ r *rand.Rand }

func (r rng2reader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(r.r.Uint32())
	}
	return len(p), nil
}
