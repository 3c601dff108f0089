package standin

import (
	"encoding/json"
	"testing"
)

func TestSeed(t *testing.T) {
	for _, tc := range []struct {
		name         string
		issues, open int
		wantErr      bool
	}{
		{"small", 50, 50, false},
		{"large mostly closed", 2000, 150, false},
		{"the benchmarks' size", 5000, 300, false},
		{"no open issue", 10, 0, true},
		{"more open than issues", 10, 11, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := initRepo(t)
			got, err := Seed(s.repo, Mix{Issues: tc.issues, Open: tc.open, Seed: 7})
			if tc.wantErr {
				if err == nil {
					t.Fatalf("Seed: no error, want one")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var all []struct {
				ID           string `json:"id"`
				Status       string `json:"status"`
				IssueType    string `json:"issue_type"`
				CommentCount int    `json:"comment_count"`
			}
			r := s.bd(s.repo, "list", "--all", "--limit", "0", "--json")
			if r.code != 0 {
				t.Fatalf("list: %+v", r)
			}
			if err := json.Unmarshal([]byte(r.stdout), &all); err != nil {
				t.Fatal(err)
			}
			closed, epics, commented := 0, 0, 0
			ids := map[string]bool{}
			for _, is := range all {
				if ids[is.ID] {
					t.Fatalf("two issues with the id %s: bd's ids are unique", is.ID)
				}
				ids[is.ID] = true
				if is.Status == "closed" {
					closed++
				}
				if is.IssueType == "epic" {
					epics++
				}
				if is.CommentCount > 0 {
					commented++
				}
			}
			if len(all) != tc.issues || got.Issues != tc.issues || closed != tc.issues-tc.open || closed != got.Closed || epics != got.Epics || epics == 0 {
				t.Fatalf("bd list: %d issues, %d closed, %d epics; Seed said %+v", len(all), closed, epics, got)
			}
			if commented == 0 || got.Comments < commented || got.Deps == 0 {
				t.Fatalf("%d issues with comments, Seed said %+v", commented, got)
			}
			var ready []json.RawMessage
			r = s.bd(s.repo, "ready", "--limit", "0", "--json")
			if err := json.Unmarshal([]byte(r.stdout), &ready); err != nil || r.code != 0 {
				t.Fatalf("ready: %v %+v", err, r)
			}
			// Chains of three: a third of the open work, give or take
			// the epics, is ready.
			if len(ready) == 0 || len(ready) >= tc.open {
				t.Fatalf("%d ready of %d open, want some but not all (chains)", len(ready), tc.open)
			}
		})
	}
}
