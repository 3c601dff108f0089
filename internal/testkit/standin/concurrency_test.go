package standin

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	"github.com/matryer/is"
)

// TestConcurrentCommands follows scenario 1 of concurrency-claim-race.txt
// (there six creates and three readies) with nine creates and three
// readies at once: all succeed, because every call serialises on the
// embedded lock.
func TestConcurrentCommands(t *testing.T) {
	is := is.New(t)
	s := initRepo(t)
	var wg sync.WaitGroup
	results := make([]result, 12)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			args := []string{"ready", "--json"}
			if i < 9 {
				args = []string{"create", fmt.Sprintf("Concurrent %d", i+1), "--json"}
			}
			results[i] = s.bd(s.repo, args...)
		}()
	}
	wg.Wait()
	for _, r := range results {
		is.Equal(r.code, 0)    // every parallel call succeeds
		is.Equal(r.stderr, "") // and prints nothing on stderr
	}
	r := s.bd(s.repo, "list", "--json")
	var list []struct{ ID, Title string }
	is.NoErr(json.Unmarshal([]byte(r.stdout), &list))
	is.Equal(len(list), 9) // no create was lost
	seen := map[string]bool{}
	for _, it := range list {
		seen[it.ID] = true
	}
	is.Equal(len(seen), 9) // ids are unique
}

// TestClaimRace replays scenarios 2 and 3: exactly one of four racing
// claims on one issue wins, and racing `ready --claim` calls each get a
// different issue.
func TestClaimRace(t *testing.T) {
	s := initRepo(t)
	target := s.createID("Claim race target", "-p", "0")

	t.Run("update --claim", func(t *testing.T) {
		is := is.New(t)
		var wg sync.WaitGroup
		results := make([]result, 4)
		for i := range results {
			wg.Add(1)
			go func() {
				defer wg.Done()
				results[i] = s.bd(s.repo, "--actor", fmt.Sprintf("agent-%d", i+1), "update", target, "--claim", "--json")
			}()
		}
		wg.Wait()
		winner := ""
		for i, r := range results {
			if r.code == 0 {
				is.Equal(winner, "") // only one claim succeeds
				winner = fmt.Sprintf("agent-%d", i+1)
				var got []struct{ Status, Assignee string }
				is.NoErr(json.Unmarshal([]byte(r.stdout), &got))
				is.Equal(got[0].Status, "in_progress")
				is.Equal(got[0].Assignee, winner)
			}
		}
		is.True(winner != "")
		for _, r := range results {
			if r.code != 0 {
				is.Equal(r.code, 1)
				is.Equal(r.stdout, "")
				is.Equal(r.stderr, fmt.Sprintf("Error claiming %s: issue already claimed by %s\n", target, winner))
			}
		}
	})

	t.Run("ready --claim", func(t *testing.T) {
		is := is.New(t)
		for i := 0; i < 5; i++ {
			s.createID(fmt.Sprintf("Ready %d", i))
		}
		var wg sync.WaitGroup
		results := make([]result, 4)
		for i := range results {
			wg.Add(1)
			go func() {
				defer wg.Done()
				results[i] = s.bd(s.repo, "--actor", fmt.Sprintf("ragent-%d", i+1), "ready", "--claim", "--json")
			}()
		}
		wg.Wait()
		got := map[string]string{}
		for i, r := range results {
			is.Equal(r.code, 0)
			var items []struct{ ID, Assignee, Status string }
			is.NoErr(json.Unmarshal([]byte(r.stdout), &items))
			is.Equal(len(items), 1)
			is.Equal(items[0].Assignee, fmt.Sprintf("ragent-%d", i+1))
			is.Equal(items[0].Status, "in_progress")
			got[items[0].ID] = items[0].Assignee
		}
		is.Equal(len(got), 4) // each racer got a different issue
	})
}
