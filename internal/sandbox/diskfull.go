package sandbox

import "strings"

// diskFullMarks are what a program prints when a write fails for want of
// space: Python's OSError for ENOSPC and EDQUOT, and the C library's words.
var diskFullMarks = []string{"[Errno 28]", "[Errno 122]", "No space left on device", "Disk quota exceeded"}

// DiskFullProblem is the problem a run that ran out of its disk quota
// reports, in words that say what the limit is and what to do.
const DiskFullProblem = "the run ran out of disk space: /workspace and /var/outputs each hold at most the sandbox's disk quota " +
	"(and /tmp its own size), so write less, or stream data instead of keeping large intermediate files"

// diskFull reports whether the output shows a write that failed for want of space.
func diskFull(output string) bool {
	for _, m := range diskFullMarks {
		if strings.Contains(output, m) {
			return true
		}
	}
	return false
}
