//go:build !failpoint

package failpoint

// Enabled says whether this binary was built with the failpoint tag.
const Enabled = false

// Inject does nothing: this build has no failpoints (see the package doc).
func Inject(string) error { return nil }
