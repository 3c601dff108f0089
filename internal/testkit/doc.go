// Package testkit is the root of ralphd's test kit: what tests and
// benchmarks run in place of the outside world, kept apart from the
// product. Nothing under internal/testkit is imported by the BUILD loop's
// packages (a test in cmd/ralphd holds that); `ralphd demo` reaches the
// stand-in bd through one edge, cmd/ralphd/cmd_demo.go.
//
//   - standin: the stand-in for bd 1.0.5, held to the recorded contract;
//     fakebd wraps it as a `bd` binary, standin/standintest builds that
//     binary for other packages' tests.
//   - scriptedapi: scripted model APIs (Messages, Responses, Chat
//     Completions, Gemini) that the real agent CLIs run against.
//   - scriptedgh: a scripted GitHub REST API that the real gh CLI runs
//     against (integrate = pr).
//   - giteaserver: a real Gitea on loopback (integrate = pr, forge =
//     gitea), built by scripts/install-gitea.
//   - gitearunner: a scripted Gitea Actions runner, a real client of
//     Gitea's runner protocol that runs jobs' run: steps on the host.
//   - gitplant: plants every kind of code git can be made to run.
//   - logjsonltest: run-log streams for tests and benchmarks.
//   - benchtest: bd-shaped issue lists.
package testkit
