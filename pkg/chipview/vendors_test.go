package chipview_test

// The tests see the vendors the binaries register.
import _ "github.com/accel-dra/accel-dra/pkg/vendors/all"
