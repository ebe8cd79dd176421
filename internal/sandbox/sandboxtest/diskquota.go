package sandboxtest

import "testing"

func testDiskQuota(t *testing.T, f *fixture) {}
