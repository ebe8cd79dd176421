// Package egress is the only way out of an environment build: a small HTTP
// forward proxy (CONNECT tunnels and plain-HTTP GETs) that the
// sandbox-worker runs, allowing only the package sources the operator
// configured and refusing everything else with a 403.
//
// pip installs the packages a model named, and pip runs their build code
// (setup.py, PEP 517 backends): that code is as untrusted as the task.
// Builds therefore run with no network of their own (a fresh network
// namespace: bubblewrap --unshare-net, or a container with network "none")
// and reach this proxy through a Unix socket bound into the sandbox. Inside,
// a few lines of Python (ForwarderScript, run by the sandbox's own python3)
// listen on 127.0.0.1 and copy each connection to that socket, then start
// pip with --proxy pointing at them. Whatever the build code does, it can
// reach no more than pip can: the policy is enforced here, outside the
// sandbox, not by the forwarder.
//
// What the proxy allows is the host:port of each configured source (the
// index URL and the find-links URLs; pypi.org and files.pythonhosted.org
// when there is no index URL). The host's loopback, the broker, the cache,
// the coordinator's API and every other host are refused, unless the
// operator named one of them as a source.
//
// Credentials never enter a sandbox. A source URL's user:password stays in
// the proxy: the sandbox sees the URL without it (SandboxURL), and the
// proxy adds the Authorization header when it forwards a request for that
// source. An https source with credentials is shown to pip as
// http://host:443/...: pip's request then reaches the proxy in the clear
// (on the sandbox's own loopback and the socket), and the proxy fetches it
// upstream over verified TLS with the credentials. An upstream proxy the
// worker must use (HTTPS_PROXY with a password) is chained to by the proxy;
// the sandbox never sees it either.
//
// Each build gets a Session, a listener of its own, so what it fetched is
// recorded apart from concurrent builds: Session.Artifacts lists the URL,
// byte count and (for plain-HTTP GETs, which the proxy sees) the SHA-256 of
// every artefact that flowed.
//
//	p, err := egress.New(egress.Config{Sources: []string{indexURL}, Logger: log})
//	s, err := p.Listen(filepath.Join(buildDir, "egress.sock"))
//	defer s.Close()
//	// bind s.Path into the sandbox at SocketPath; run
//	// python3 -I -c egress.ForwarderScript SocketPath -- pip install ... --proxy {proxy} ...
//	arts := s.Artifacts()
package egress
