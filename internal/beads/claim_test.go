package beads_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/ralphd/ralphd/internal/beads"
)

// serializationMsg is the message a racing loser gets from a Dolt server
// (contract: claim-race-server.txt).
const serializationMsg = "dolt commit: Error 1213 (40001): serialization failure: this transaction conflicts with a committed transaction from another client, try restarting transaction."

func TestParseRefusal(t *testing.T) {
	for _, c := range []struct {
		name string
		msg  string
		want beads.Refusal
		ok   bool
	}{
		{"already claimed", "Error claiming wt-w4y: issue already claimed by alice\n", beads.Refusal{Kind: beads.AlreadyClaimed, ID: "wt-w4y", Holder: "alice"}, true},
		{"holder with slashes and spaces", "Error claiming a-1: issue already claimed by ralphd/host a/w3", beads.Refusal{Kind: beads.AlreadyClaimed, ID: "a-1", Holder: "ralphd/host a/w3"}, true},
		{"not claimable", "Error claiming wt-84m: issue not claimable: status closed", beads.Refusal{Kind: beads.NotClaimable, ID: "wt-84m", Status: "closed"}, true},
		{"update lost race", "Error claiming sv-1: " + serializationMsg, beads.Refusal{Kind: beads.Serialization, ID: "sv-1"}, true},
		{"ready lost race (bare)", serializationMsg, beads.Refusal{Kind: beads.Serialization}, true},
		{"after a warning line", "warning: beads.role not configured (GH#2950).\nError claiming x-1: issue already claimed by bob", beads.Refusal{Kind: beads.AlreadyClaimed, ID: "x-1", Holder: "bob"}, true},
		{"unknown id is no refusal", `Error resolving wt-zzz: no issue found matching "wt-zzz"`, beads.Refusal{}, false},
		{"bare already-claimed names no id", "issue already claimed by bob", beads.Refusal{}, false},
		{"empty holder", "Error claiming a-1: issue already claimed by ", beads.Refusal{}, false},
		{"id with a space", "Error claiming a b: issue already claimed by c", beads.Refusal{}, false},
		{"only half the 1213 text", "Error claiming a: Error 1213 (40001)", beads.Refusal{}, false},
		{"empty", "", beads.Refusal{}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			is := is.New(t)
			got, ok := beads.ParseRefusal(c.msg)
			is.Equal(ok, c.ok)
			is.Equal(got, c.want)
		})
	}
}

func FuzzParseRefusal(f *testing.F) {
	for _, s := range []string{
		"Error claiming wt-w4y: issue already claimed by alice\n",
		"Error claiming wt-84m: issue not claimable: status closed",
		serializationMsg, "Error claiming : x", "Error claiming a: ",
	} {
		f.Add(s)
	}
	for _, fx := range loadFixtures(f) { // the recorded claim races and refusals among them
		f.Add(string(fx.Stdout))
		f.Add(string(fx.Stderr))
	}
	f.Fuzz(func(t *testing.T, msg string) {
		r, ok := beads.ParseRefusal(msg)
		if !ok {
			if r != (beads.Refusal{}) {
				t.Fatalf("no refusal but %+v", r)
			}
			return
		}
		switch r.Kind {
		case beads.AlreadyClaimed:
			if r.Holder == "" || r.ID == "" || !strings.Contains(msg, r.Holder) {
				t.Fatalf("bad already-claimed %+v", r)
			}
		case beads.NotClaimable:
			if r.Status == "" || r.ID == "" {
				t.Fatalf("bad not-claimable %+v", r)
			}
		case beads.Serialization:
			if !strings.Contains(msg, "Error 1213 (40001)") {
				t.Fatalf("serialization without 1213: %q", msg)
			}
		default:
			t.Fatalf("ok with kind %v", r.Kind)
		}
		if r.ID != "" && !strings.Contains(msg, "Error claiming "+r.ID+": ") {
			t.Fatalf("id %q not in %q", r.ID, msg)
		}
	})
}

// TestClaimOutcomes runs the client against recorded claim outputs and the
// server-mode losing side.
func TestClaimOutcomes(t *testing.T) {
	ctx := context.Background()
	t.Run("already claimed", func(t *testing.T) {
		is := is.New(t)
		bin, _ := replayBD(t, "claim-bob-after-alice-json")
		c := &beads.Client{Bin: bin, Actor: "bob"}
		_, err := c.Claim(ctx, "wt-w4y")
		r, ok := beads.RefusalOf(err)
		is.True(ok)
		is.Equal(r, beads.Refusal{Kind: beads.AlreadyClaimed, ID: "wt-w4y", Holder: "alice"})
		is.True(!errors.Is(err, beads.ErrSerialization))
	})
	t.Run("not claimable", func(t *testing.T) {
		is := is.New(t)
		bin, _ := replayBD(t, "claim-closed-json")
		_, err := (&beads.Client{Bin: bin}).Claim(ctx, "wt-84m")
		r, ok := beads.RefusalOf(err)
		is.True(ok)
		is.Equal(r.Kind, beads.NotClaimable)
		is.Equal(r.Status, "closed")
	})
	t.Run("unknown id", func(t *testing.T) {
		is := is.New(t)
		bin, _ := replayBD(t, "claim-unknown-id-json")
		_, err := (&beads.Client{Bin: bin}).Claim(ctx, "wt-zzz")
		_, ok := beads.RefusalOf(err)
		is.True(!ok)
		is.True(errors.Is(err, beads.ErrIssueNotFound))
	})
	t.Run("ready --claim", func(t *testing.T) {
		is := is.New(t)
		bin, state := replayBD(t, "claim-ready-claim-json", "claim-ready-claim-nothing-ready-json")
		c := &beads.Client{Bin: bin, Actor: "eve"}
		got, ok, err := c.ReadyClaim(ctx, beads.ClaimFilter{})
		is.NoErr(err)
		is.True(ok)
		is.Equal(got.ID, "wt-q37")
		is.Equal(got.Assignee, "eve")
		is.Equal(got.Status, beads.StatusInProgress)
		_, ok, err = c.ReadyClaim(ctx, beads.ClaimFilter{})
		is.NoErr(err)
		is.True(!ok) // [] is "nothing", not an error
		calls := readCalls(t, state)
		is.Equal(calls[0].Args, []string{"--actor", "eve", "ready", "--claim", "--json"})
	})
	t.Run("ready --claim loses a server race", func(t *testing.T) {
		is := is.New(t)
		bin, _ := replayOutputs(t, fixture{ExitCode: 1,
			Stdout: []byte("{\n  \"error\": \"" + serializationMsg + "\",\n  \"schema_version\": 1\n}\n")})
		_, _, err := (&beads.Client{Bin: bin}).ReadyClaim(ctx, beads.ClaimFilter{})
		is.True(errors.Is(err, beads.ErrSerialization))
		r, ok := beads.RefusalOf(err)
		is.True(ok)
		is.Equal(r.Kind, beads.Serialization)
	})
	t.Run("update --claim loses a server race", func(t *testing.T) {
		is := is.New(t)
		bin, _ := replayOutputs(t, fixture{ExitCode: 1, Stderr: []byte("Error claiming sv-1: " + serializationMsg + "\n")})
		_, err := (&beads.Client{Bin: bin}).Claim(ctx, "sv-1")
		is.True(errors.Is(err, beads.ErrSerialization))
	})
	t.Run("release", func(t *testing.T) {
		is := is.New(t)
		bin, state := replayBD(t, "claim-unclaim-status-open-assignee-empty-json")
		got, err := (&beads.Client{Bin: bin, Actor: "alice"}).Release(ctx, "wt-w4y")
		is.NoErr(err)
		is.Equal(got.Status, beads.StatusOpen)
		is.Equal(got.Assignee, "")
		is.Equal(readCalls(t, state)[0].Args, []string{"--actor", "alice", "update", "wt-w4y", "--status", "open", "--assignee", "", "--json"})
	})
}
