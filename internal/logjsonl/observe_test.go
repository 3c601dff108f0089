package logjsonl

import (
	"fmt"
	"testing"
)

func TestRingKeepsTheLastN(t *testing.T) {
	for _, tc := range []struct {
		n, add int
		want   string
	}{
		{3, 0, "[]"},
		{3, 2, "[e0 e1]"},
		{3, 3, "[e0 e1 e2]"},
		{3, 5, "[e2 e3 e4]"},
		{1, 4, "[e3]"},
		{0, 2, "[e1]"},
	} {
		r := NewRing(tc.n)
		for i := range tc.add {
			r.Observe(Event{Name: fmt.Sprintf("e%d", i)})
		}
		var names []string
		for _, ev := range r.Last() {
			names = append(names, ev.Name)
		}
		if got := fmt.Sprint(names); got != tc.want {
			t.Errorf("NewRing(%d) after %d: got %s, want %s", tc.n, tc.add, got, tc.want)
		}
	}
}

func TestFanoutReachesEverySinkInOrder(t *testing.T) {
	var got []string
	sink := func(tag string) Sink { return Func(func(ev Event) { got = append(got, tag+ev.Name) }) }
	Fanout{sink("a:"), nil, sink("b:")}.Observe(Event{Name: "x"})
	if fmt.Sprint(got) != "[a:x b:x]" {
		t.Fatalf("got %v", got)
	}
}
