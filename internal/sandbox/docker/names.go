package docker

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/autocoder/autocoder/pkg/cache"
)

// Every name this package gives the engine (image repositories, labels,
// container names) is built in this file.

// builderVersion is part of every image name: bump it when the layout of an
// environment image (the Dockerfile below, the stub, the user) changes, so
// old images are not reused.
const builderVersion = 2 // 2: pip confined to the egress proxy

// stageName tags the image of a build's trusted steps, which pip's
// container starts from; the tag is removed once the environment is made.
func stageName(name string) string { return name + "-stage" }

// buildContainerName names the container pip runs in for image name.
func buildContainerName(name, nonce string) string {
	return "autocoder-build-" + strings.TrimPrefix(name, imageRepo+":") + "-" + nonce
}

// imageRepo is the repository of environment images: autocoder-env:<hash>.
const imageRepo = "autocoder-env"

// Labels of images this backend builds.
const (
	labelBuilder     = "autocoder.builder"      // builderVersion
	labelBase        = "autocoder.base"         // base image ID
	labelPipPackages = "autocoder.pip-packages" // JSON array, sorted
	labelAptPackages = "autocoder.apt-packages" // JSON array, sorted
	labelPipIndex    = "autocoder.pip-index"    // hash of the pip index settings
	labelExtra       = "autocoder.extra"        // hash of Config.ExtraCommands ("none" without any)
	labelParent      = "autocoder.parent"       // the image this one was built FROM
)

// Labels of containers this backend runs. Every container carries the
// first four, so a reaper on any worker can tell whose it is and whether its
// lease is over; labelLiveness when its worker heartbeats (liveness.go).
const (
	labelWorker      = "autocoder.worker"       // Config.Worker of the backend that made it
	labelJob         = "autocoder.job"          // RunSpec.JobID ("none" without one), or "pool"/"probe"
	labelLeaseExpiry = "autocoder.lease-expiry" // unix seconds after which any reaper may remove it
	labelRole        = "autocoder.role"         // "run", "pool" or "probe"
	labelLiveness    = "autocoder.liveness"     // liveness domain: the worker heartbeats in that cache
	labelInstance    = "autocoder.instance"     // the Backend instance (random): its heartbeat's key
	labelJobName     = "autocoder.job-name"     // the job's name tag (jobNameTag), on a run of a named job's image
)

// noJob is the job label of a run whose RunSpec names no job.
const noJob = "none"

// heartbeatKey is the cache key of the heartbeat of a Backend instance.
// An instance, not the worker name: a worker restarted under the same name
// (pid 1 in a restarted pod) must not keep its former life's containers.
func heartbeatKey(instance string) string {
	return cache.Key("sandbox-worker-heartbeat", []byte(instance))
}

// livenessDomainKey is the cache key of the cache's liveness domain.
func livenessDomainKey() string { return cache.Key("sandbox-liveness-domain") }

// livenessDomainLock guards the creation of the liveness domain.
const livenessDomainLock = "sandbox-liveness-domain"

// imageName is the environment image of a content hash.
func imageName(hash string) string { return imageRepo + ":" + hash }

// jobImageName is the same image tagged for a named job (JobSpec.Name):
// autocoder-env-<name>:<hash>, so `docker images` shows whose it is; the
// name is sanitised (jobNameTag). "" when the name leaves nothing.
func jobImageName(job, hash string) string {
	t := jobNameTag(job)
	if t == "" {
		return ""
	}
	return imageRepo + "-" + t + ":" + hash
}

// jobNameTag is a job's name as a repository component: lower case,
// every run of characters other than a-z and 0-9 one '-', no '-' at
// either end, at most 63 characters.
func jobNameTag(job string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(job) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			b.WriteRune(r)
			dash = false
			continue
		}
		dash = true
	}
	return strings.TrimRight(b.String()[:min(b.Len(), 63)], "-")
}

var envRefRe = regexp.MustCompile(`^` + imageRepo + `(?:-([a-z0-9]+(?:-[a-z0-9]+)*))?:([0-9a-f]{32})$`)

// parseEnv reads an environment reference (imageName or jobImageName):
// the content-named image runs use, and the job's name tag ("" for none).
func parseEnv(ref string) (image, job string, ok bool) {
	m := envRefRe.FindStringSubmatch(ref)
	if m == nil {
		return "", "", false
	}
	return imageName(m[2]), m[1], true
}

// imageHash hashes what an environment image is made of: the base image,
// its Python, the packages, the pip index settings, the operator's extra
// build commands (in order) and the builder version. Without extra
// commands the hash is what it was before they existed, so images built
// then are still found.
func imageHash(baseID, pythonVersion string, pip, apt []string, pipIndex string, extra []string) string {
	h := sha256.New()
	fmt.Fprintf(h, "autocoder docker env\nbuilder %d\nbase %s\npython %s\npip-index %s\n",
		builderVersion, baseID, pythonVersion, pipIndex)
	for _, c := range extra {
		fmt.Fprintf(h, "extra %q\n", c)
	}
	for _, p := range pip {
		fmt.Fprintf(h, "pip %s\n", p)
	}
	for _, p := range apt {
		fmt.Fprintf(h, "apt %s\n", p)
	}
	return hex.EncodeToString(h.Sum(nil))[:32]
}

// buildLockName is the cross-worker lock (cache.Cache.TryLock) of one image build.
func buildLockName(image string) string { return "sandbox-docker-build:" + image }

// containerLabels are the labels of a container leased until expiry;
// domain is the liveness domain of its worker's heartbeat ("": none);
// jobName the job's name tag ("": none, or a pooled container, started
// before anyone's run).
func containerLabels(worker, instance, job, jobName, role, domain string, expiry time.Time) map[string]string {
	l := map[string]string{
		labelWorker:      worker,
		labelInstance:    instance,
		labelJob:         job,
		labelRole:        role,
		labelLeaseExpiry: strconv.FormatInt(expiry.Unix(), 10),
	}
	if domain != "" {
		l[labelLiveness] = domain
	}
	if jobName != "" {
		l[labelJobName] = jobName
	}
	return l
}

// reaperFilter selects every container a backend of this package made.
const reaperFilter = labelLeaseExpiry
