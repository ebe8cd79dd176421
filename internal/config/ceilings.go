package config

import (
	"flag"
	"fmt"
	"math"
	"os"
	"strconv"
	"time"

	"github.com/autocoder/autocoder/pkg/messages"
)

// RunCeilings are a sandbox-worker's own caps on one sandboxed run
// (sandboxstages.Ceilings). A zero field means the worker's default.
type RunCeilings struct {
	Timeout time.Duration
	Memory  int64 // bytes
	CPUs    float64
	// OutputFiles and OutputBytes bound what one run returns from
	// /var/outputs (sandbox.OutputCaps).
	OutputFiles int
	OutputBytes int64
}

// readRunCeilings reads the ceilings' environment variables.
func (c *Config) readRunCeilings() {
	c.MaxRunTimeout = os.Getenv("AUTOCODER_MAX_RUN_TIMEOUT")
	c.MaxMemory = os.Getenv("AUTOCODER_MAX_MEMORY")
	c.MaxCPUs = os.Getenv("AUTOCODER_MAX_CPUS")
	c.MaxOutputFiles = os.Getenv("AUTOCODER_MAX_OUTPUT_FILES")
	c.MaxOutputBytes = os.Getenv("AUTOCODER_MAX_OUTPUT_BYTES")
	c.DiskQuota = os.Getenv("AUTOCODER_SANDBOX_DISK_QUOTA")
}

// registerRunCeilings adds the ceilings' flags.
func (c *Config) registerRunCeilings(fs *flag.FlagSet) {
	fs.StringVar(&c.MaxRunTimeout, "max-run-timeout", c.MaxRunTimeout, "sandbox-worker: the longest one run may take, whatever its job asks; default 30m (AUTOCODER_MAX_RUN_TIMEOUT)")
	fs.StringVar(&c.MaxMemory, "max-memory", c.MaxMemory, "sandbox-worker: the most memory one run may have, e.g. 8Gi; default 8Gi (AUTOCODER_MAX_MEMORY)")
	fs.StringVar(&c.MaxCPUs, "max-cpus", c.MaxCPUs, "sandbox-worker: the most CPUs one run may have; default the machine's cores (AUTOCODER_MAX_CPUS)")
	fs.StringVar(&c.MaxOutputFiles, "max-output-files", c.MaxOutputFiles, "sandbox-worker: the most files and directories one run returns from /var/outputs; default 10000 (AUTOCODER_MAX_OUTPUT_FILES)")
	fs.StringVar(&c.MaxOutputBytes, "max-output-bytes", c.MaxOutputBytes, "sandbox-worker: the most bytes one run returns from /var/outputs, at most 64Mi; default 64Mi (AUTOCODER_MAX_OUTPUT_BYTES)")
	fs.StringVar(&c.DiskQuota, "sandbox-disk-quota", c.DiskQuota, "sandbox-worker: what one run may write to /workspace, and to /var/outputs, each a tmpfs of this size; default 256Mi (AUTOCODER_SANDBOX_DISK_QUOTA)")
}

// SandboxDiskQuota parses DiskQuota: 0 for the backends' default (256Mi).
func (c *Config) SandboxDiskQuota() (int64, error) {
	if c.DiskQuota == "" {
		return 0, nil
	}
	q, err := messages.ParseQuantity(c.DiskQuota)
	if err != nil || q < 1<<20 {
		return 0, fmt.Errorf("AUTOCODER_SANDBOX_DISK_QUOTA: %q is not a quantity of at least 1Mi, such as 256Mi", c.DiskQuota)
	}
	return q, nil
}

// Ceilings parses MaxRunTimeout, MaxMemory and MaxCPUs. The error names
// the setting.
func (c *Config) Ceilings() (RunCeilings, error) {
	var r RunCeilings
	if c.MaxRunTimeout != "" {
		d, err := time.ParseDuration(c.MaxRunTimeout)
		if err != nil || d <= 0 {
			return r, fmt.Errorf("AUTOCODER_MAX_RUN_TIMEOUT: %q is not a positive duration such as 30m", c.MaxRunTimeout)
		}
		r.Timeout = d
	}
	if c.MaxMemory != "" {
		m, err := messages.ParseQuantity(c.MaxMemory)
		if err != nil || m < 16<<20 {
			return r, fmt.Errorf("AUTOCODER_MAX_MEMORY: %q is not a quantity of at least 16Mi, such as 8Gi", c.MaxMemory)
		}
		r.Memory = m
	}
	if c.MaxCPUs != "" {
		n, err := strconv.ParseFloat(c.MaxCPUs, 64)
		if err != nil || !(n > 0) || math.IsInf(n, 0) {
			return r, fmt.Errorf("AUTOCODER_MAX_CPUS: %q is not a positive number of CPUs", c.MaxCPUs)
		}
		r.CPUs = n
	}
	return r, c.outputCaps(&r)
}

// outputCaps parses MaxOutputFiles and MaxOutputBytes into r.
func (c *Config) outputCaps(r *RunCeilings) error {
	if c.MaxOutputFiles != "" {
		n, err := strconv.Atoi(c.MaxOutputFiles)
		if err != nil || n < 1 {
			return fmt.Errorf("AUTOCODER_MAX_OUTPUT_FILES: %q is not a positive number of files", c.MaxOutputFiles)
		}
		r.OutputFiles = n
	}
	if c.MaxOutputBytes != "" {
		m, err := messages.ParseQuantity(c.MaxOutputBytes)
		if err != nil || m < 1 || m > 64<<20 {
			return fmt.Errorf("AUTOCODER_MAX_OUTPUT_BYTES: %q is not a quantity between 1 and 64Mi", c.MaxOutputBytes)
		}
		r.OutputBytes = m
	}
	return nil
}
