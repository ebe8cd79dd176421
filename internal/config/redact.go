package config

import "github.com/autocoder/autocoder/pkg/cache"

// secretURL is a flag holding a URL that may carry credentials: --help
// prints its default (the environment's value) with them cut out.
type secretURL struct{ p *string }

func (f secretURL) String() string {
	if f.p == nil {
		return ""
	}
	return cache.RedactURL(*f.p)
}

func (f secretURL) Set(s string) error {
	*f.p = s
	return nil
}
