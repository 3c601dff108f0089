package beads

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/matryer/is"
)

const actor = "ralphd/host/w1"

// step is one scripted tracker answer.
type step struct {
	issue Issue
	ok    bool
	err   error
}

// fakeTracker answers claims from a script and shows from a map.
type fakeTracker struct {
	claims   []step
	shows    map[string]Issue
	showErr  error
	released []string
	calls    int
}

func (f *fakeTracker) next() step {
	f.calls++
	if len(f.claims) == 0 {
		return step{err: errors.New("script exhausted")}
	}
	s := f.claims[0]
	f.claims = f.claims[1:]
	return s
}

func (f *fakeTracker) Claim(ctx context.Context, id string) (Issue, error) {
	s := f.next()
	return s.issue, s.err
}

func (f *fakeTracker) ReadyClaim(ctx context.Context, _ ClaimFilter) (Issue, bool, error) {
	s := f.next()
	return s.issue, s.ok, s.err
}

func (f *fakeTracker) Show(ctx context.Context, id string) (Issue, error) {
	if f.showErr != nil {
		return Issue{}, f.showErr
	}
	is, ok := f.shows[id]
	if !ok {
		return Issue{}, &ExitError{Code: 1, Stderr: `Error resolving ` + id + `: no issue found matching "` + id + `"`}
	}
	return is, nil
}

func (f *fakeTracker) Release(ctx context.Context, id string) (Issue, error) {
	f.released = append(f.released, id)
	return Issue{ID: id, Status: StatusOpen}, nil
}

func exitErr(stdout, stderr string) error {
	msg, _ := ParseErrorObject([]byte(stdout))
	return &ExitError{Code: 1, Stderr: stderr, Message: msg}
}

var (
	serialization = exitErr(`{"error": "dolt commit: Error 1213 (40001): serialization failure: this transaction conflicts with a committed transaction from another client, try restarting transaction.", "schema_version": 1}`, "")
	heldByOther   = exitErr("", "Error claiming a-1: issue already claimed by ralphd/other/w2\n")
	closedIssue   = exitErr("", "Error claiming a-1: issue not claimable: status closed\n")
	mine          = Issue{ID: "a-1", Status: StatusInProgress, Assignee: actor}
)

func TestNext(t *testing.T) {
	for _, c := range []struct {
		name      string
		claims    []step
		shows     map[string]Issue
		want      ClaimOutcome
		holder    string
		tries     int
		wantErr   bool
		wantSleep int
	}{
		{"won and read back", []step{{issue: mine, ok: true}}, map[string]Issue{"a-1": mine}, Won, "", 1, false, 0},
		{"nothing ready", []step{{ok: false}}, nil, Empty, "", 1, false, 0},
		{"serialization then won", []step{{err: serialization}, {err: serialization}, {issue: mine, ok: true}},
			map[string]Issue{"a-1": mine}, Won, "", 3, false, 2},
		{"serialization every time is busy, not an error", []step{{err: serialization}, {err: serialization}, {err: serialization}, {err: serialization}},
			nil, Busy, "", 4, false, 3},
		{"read-back shows another holder (duplicate claim upstream)", []step{{issue: mine, ok: true}},
			map[string]Issue{"a-1": {ID: "a-1", Status: StatusInProgress, Assignee: "ralphd/other/w2"}}, Lost, "ralphd/other/w2", 1, false, 0},
		{"read-back shows it open again", []step{{issue: mine, ok: true}},
			map[string]Issue{"a-1": {ID: "a-1", Status: StatusOpen}}, Lost, "", 1, false, 0},
		{"read-back shows it closed", []step{{issue: mine, ok: true}},
			map[string]Issue{"a-1": {ID: "a-1", Status: StatusClosed, Assignee: actor}}, Lost, actor, 1, false, 0},
		{"other bd failure is an error", []step{{err: exitErr("", "Error: no beads database found")}}, nil, 0, "", 1, true, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			is := is.New(t)
			tr := &fakeTracker{claims: c.claims, shows: c.shows}
			slept := 0
			cl := &Claimer{Tracker: tr, Actor: actor, MaxTries: 4, Rand: func() float64 { return 0.5 },
				Sleep: func(ctx context.Context, d time.Duration) error { slept++; return nil }}
			res, err := cl.Next(context.Background())
			is.Equal(err != nil, c.wantErr)
			if c.wantErr {
				return
			}
			is.Equal(res.Outcome, c.want)
			is.Equal(res.Holder, c.holder)
			is.Equal(res.Tries, c.tries)
			is.Equal(slept, c.wantSleep)
		})
	}
}

func TestClaim(t *testing.T) {
	for _, c := range []struct {
		name   string
		claims []step
		want   ClaimOutcome
		holder string
		status string
	}{
		{"won", []step{{issue: mine}}, Won, "", ""},
		{"already claimed", []step{{err: heldByOther}}, Lost, "ralphd/other/w2", ""},
		{"not claimable", []step{{err: closedIssue}}, Unclaimable, "", "closed"},
		{"update lost a server race, then someone holds it",
			[]step{{err: exitErr("", "Error claiming a-1: dolt commit: Error 1213 (40001): serialization failure: x\n")}, {err: heldByOther}}, Lost, "ralphd/other/w2", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			is := is.New(t)
			tr := &fakeTracker{claims: c.claims, shows: map[string]Issue{"a-1": mine}}
			cl := &Claimer{Tracker: tr, Actor: actor, Sleep: func(context.Context, time.Duration) error { return nil }}
			res, err := cl.Claim(context.Background(), "a-1")
			is.NoErr(err)
			is.Equal(res.Outcome, c.want)
			is.Equal(res.Holder, c.holder)
			is.Equal(res.Status, c.status)
		})
	}
}

func TestCancelledWhileBackingOff(t *testing.T) {
	is := is.New(t)
	ctx, cancel := context.WithCancel(context.Background())
	tr := &fakeTracker{claims: []step{{err: serialization}, {err: serialization}}}
	cl := &Claimer{Tracker: tr, Actor: actor, BaseDelay: time.Hour, MaxDelay: time.Hour, Rand: func() float64 { return 0.9 }}
	go cancel()
	_, err := cl.Next(ctx)
	is.True(errors.Is(err, context.Canceled))
	is.Equal(tr.calls, 1) // no second try after the cancel
}

func TestBackoff(t *testing.T) {
	is := is.New(t)
	cl := &Claimer{BaseDelay: 10 * time.Millisecond, MaxDelay: 100 * time.Millisecond, Rand: func() float64 { return 0.999999 }}
	prev := time.Duration(0)
	for n := 1; n <= 6; n++ {
		d := cl.backoff(n)
		is.True(d >= prev)                      // grows
		is.True(d <= 100*time.Millisecond)      // capped
		is.True(d < (10*time.Millisecond)<<n+1) // within base·2^n
		prev = d
	}
	is.True(cl.backoff(80) <= 100*time.Millisecond) // no overflow
	cl.Rand = func() float64 { return 7 }           // a broken source
	is.Equal(cl.backoff(3), time.Duration(0))
}

func TestRelease(t *testing.T) {
	is := is.New(t)
	tr := &fakeTracker{shows: map[string]Issue{
		"a-1": mine,
		"a-2": {ID: "a-2", Status: StatusInProgress, Assignee: "ralphd/other/w2"},
	}}
	cl := &Claimer{Tracker: tr, Actor: actor}
	ok, err := cl.Release(context.Background(), "a-1")
	is.NoErr(err)
	is.True(ok)
	ok, err = cl.Release(context.Background(), "a-2")
	is.NoErr(err)
	is.True(!ok) // never releases someone else's claim
	is.Equal(tr.released, []string{"a-1"})
}

func TestNoActor(t *testing.T) {
	_, err := (&Claimer{Tracker: &fakeTracker{}}).Next(context.Background())
	if err == nil {
		t.Fatal("claiming with no actor must fail")
	}
}
