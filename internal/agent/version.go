package agent

// Versioner is implemented by backends whose binary can print its
// version, for `ralphd agents`. VersionArgs are the arguments to pass to
// Binary(); the version is the first line the binary prints. The command
// backend has no version of its own and does not implement it.
type Versioner interface {
	VersionArgs() []string
}
