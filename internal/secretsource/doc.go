// Package secretsource is a sandbox worker's secrets: the values of the
// secrets a job names (options.secrets), read from a directory of files
// (AUTOCODER_SECRETS_DIR) or the worker's environment
// (AUTOCODER_SECRET_<NAME>), set in the sandbox's environment only. A
// value never enters a message, the job's state, an event, a result, a
// log line or a cache entry: the stage cache keys it by an HMAC
// (KeyPart), and what a run returns has every value cut out (Redact).
//
//	src := secretsource.New(cfg.SecretsDir, keyring.Derive("secret-values"))
//	values, err := src.Resolve(cmd.Settings.Secrets) // the run's environment
//	key := src.KeyPart(values)                       // part of the stage's cache key
//	out := secretsource.Redact(res.Stdout, values)   // what the run returns
package secretsource
