package agent

import "testing"

// RegisterForTest adds b to the registry until t ends, as one more line
// in registry would. t must not be parallel: the registry is shared.
func RegisterForTest(t testing.TB, b Backend) {
	t.Helper()
	testOnlyBackends = append(testOnlyBackends, backendEntry{proto: b, make: func(Config) (Backend, error) { return b, nil }})
	t.Cleanup(func() { testOnlyBackends = testOnlyBackends[:len(testOnlyBackends)-1] })
}
