// Package broker carries an agent's bd calls to the running ralphd.
//
// The `bd` first on a BUILD or PLANNING agent's PATH is a thin client
// (ralphd's hidden bd-client command). It sends its argv, its working
// directory and its stdin over a unix socket in the iteration's private
// directory, and streams back the real bd's stdout, stderr and exit code
// byte for byte. The Server, inside ralphd, decides each call against the
// policy with the mode it holds in memory, runs the real bd itself
// (outside any sandbox) and audits the call. The agent has nothing to
// rewrite: the client carries no mode and no path to the real bd.
//
// A call is served only when it carries the iteration's secret token and
// comes from a process in the iteration's process tree (SO_PEERCRED, then
// the parent chain up to the agent's leader). The socket is closed when
// the iteration ends, so processes the agent left behind are refused.
package broker
