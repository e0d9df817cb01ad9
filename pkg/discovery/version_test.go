package discovery

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSemverFromVendorNormalizesVendorVersions(t *testing.T) {
	for in, want := range map[string]string{
		"23.0.3":        "23.0.3",
		"23.0.rc3":      "23.0.0-rc3",
		"24.1.RC2.b030": "24.1.0-rc2+b030",
		"23.0.3.1":      "23.0.3+1",
		"v4.20.18":      "4.20.18",
		" 5.10.22 \n":   "5.10.22",
	} {
		t.Run(in, func(t *testing.T) {
			got, err := SemverFromVendor(in)
			require.NoError(t, err)
			require.Equal(t, want, got)
		})
	}
}

func TestSemverFromVendorRejectsGarbage(t *testing.T) {
	for _, in := range []string{"", "unknown", "23.x", "1.2"} {
		_, err := SemverFromVendor(in)
		require.Error(t, err, in)
		require.Contains(t, err.Error(), "is not a version accel-dra understands")
	}
}
