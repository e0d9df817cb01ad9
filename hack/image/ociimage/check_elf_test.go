package ociimage

import (
	"bytes"
	"os"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
)

// The binaries load the vendors' libraries with purego, which links them
// against the glibc loader: checkELF accepts that loader and no other.
func TestCheckELFAcceptsOnlyTheBasesLoaderAsInterpreter(t *testing.T) {
	arch, ok := Arches[runtime.GOARCH]
	if !ok {
		t.Skipf("no image architecture %s", runtime.GOARCH)
	}
	self, err := os.ReadFile(os.Args[0])
	require.NoError(t, err)
	if !bytes.Contains(self, []byte(arch.Loader+"\x00")) {
		t.Skip("this test binary has no program interpreter (built without cgo)")
	}
	require.NoError(t, checkELF(self, arch, true), "a binary linked against %s", arch.Loader)
	// Another loader of the same length, so the ELF stays intact.
	other := []byte(arch.Loader)
	other[len(other)-4] = 'X'
	bad := bytes.Replace(self, []byte(arch.Loader+"\x00"), append(other, 0), 1)
	require.ErrorContains(t, checkELF(bad, arch, true), "not the base's loader")
}
