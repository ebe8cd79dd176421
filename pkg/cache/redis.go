package cache

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/autocoder/autocoder/pkg/redact"
	"github.com/redis/go-redis/v9"
)

var _ Cache = (*Redis)(nil)

// redisPingTimeout bounds how long OpenRedis waits for the first PING, so a
// wrong address fails at startup rather than on the first stage.
const redisPingTimeout = 5 * time.Second

// unlockScript deletes the lock only if it still holds the caller's token.
// GET and DEL must be one atomic step: otherwise a lock that expired and was
// taken by another worker between them would be deleted under its new holder.
const unlockScript = `if redis.call("GET", KEYS[1]) == ARGV[1] then
	return redis.call("DEL", KEYS[1])
end
return 0`

// Redis is a Cache on a Redis server, shared by every worker of a fleet.
// Locks are single-instance Redis locks (a set-if-absent script and a
// compare-and-delete script), which is all a cache needs: a lost lock costs a duplicate
// computation, never a wrong result.
type Redis struct {
	client *redis.Client
	unlock *redis.Script
	addr   string // for error messages; the URL may hold a password

	closeOnce sync.Once
	closeErr  error
}

// RedisOptions are a Redis connection's settings beyond its URL.
type RedisOptions struct {
	// CAFile is a PEM file of the CAs that sign a rediss:// server's
	// certificate (AUTOCODER_REDIS_TLS_CA). Empty: the system's roots.
	CAFile string
	// CertFile and KeyFile are a client certificate and its key, for a
	// server that asks for one (tls-auth-clients). Empty: none.
	CertFile, KeyFile string
}

// OpenRedis connects to the Redis server at url
// ("redis://[user:password@]host:port/db", "rediss://..." for TLS, or
// "unix:///path"; go-redis's query options such as dial_timeout and
// read_timeout are honoured) and checks that it answers a PING. Errors
// never show the URL's password.
func OpenRedis(ctx context.Context, url string) (*Redis, error) {
	return OpenRedisWith(ctx, url, RedisOptions{})
}

// OpenRedisWith is OpenRedis with the TLS files of o.
func OpenRedisWith(ctx context.Context, url string, o RedisOptions) (*Redis, error) {
	opts, err := redis.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("cache: redis url %s: %w", RedactURL(url), redact.Error(err, redact.Secrets(url)...))
	}
	if err := o.applyTLS(opts); err != nil {
		return nil, err
	}
	// Without this, go-redis ignores ctx deadlines on the socket and a caller's
	// timeout would not cut a read from a wedged server short.
	opts.ContextTimeoutEnabled = true

	client := redis.NewClient(opts)
	pingCtx, cancel := context.WithTimeout(ctx, redisPingTimeout)
	defer cancel()
	if err := client.Ping(pingCtx).Err(); err != nil {
		_ = client.Close()
		return nil, fmt.Errorf("cache: redis at %s unreachable: %w", opts.Addr, redact.Error(err, redact.Secrets(url)...))
	}
	return &Redis{
		client: client,
		unlock: redis.NewScript(unlockScript),
		addr:   opts.Addr,
	}, nil
}

// Get implements Cache.
func (r *Redis) Get(ctx context.Context, key string) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("cache: redis get: %w", err)
	}
	res, err := redisBoundedGet.Run(ctx, r.client, []string{key}, MaxValueBytes).Result()
	if errors.Is(err, redis.Nil) {
		return nil, ErrMiss
	}
	if err != nil {
		return nil, r.wrap("get", err)
	}
	v, ok := res.(string)
	if !ok {
		return nil, ErrMiss // over MaxValueBytes: not read
	}
	return []byte(v), nil
}

// boundedGetScript is GET of a value no larger than ARGV[1], in one
// round trip; a larger one is -1, never sent.
const boundedGetScript = `if redis.call("STRLEN", KEYS[1]) > tonumber(ARGV[1]) then
	return -1
end
return redis.call("GET", KEYS[1])`

var redisBoundedGet = redis.NewScript(boundedGetScript)

// Set implements Cache.
func (r *Redis) Set(ctx context.Context, key string, value []byte, ttl time.Duration) error {
	if err := checkSetTTL(ttl); err != nil {
		return err
	}
	if err := checkValue(value); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("cache: redis set: %w", err)
	}
	// A plain SET (no KEEPTTL) also clears an older entry's ttl when ttl is 0.
	if err := r.client.Set(ctx, key, value, ttl).Err(); err != nil {
		return r.wrap("set", err)
	}
	return nil
}

// Delete implements Cache.
func (r *Redis) Delete(ctx context.Context, key string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("cache: redis delete: %w", err)
	}
	if err := r.client.Del(ctx, key).Err(); err != nil {
		return r.wrap("delete", err)
	}
	return nil
}

// TryLock implements Cache.
func (r *Redis) TryLock(ctx context.Context, name string, ttl time.Duration) (string, error) {
	if err := checkLockTTL(ttl); err != nil {
		return "", err
	}
	// Checked here so that a cancelled caller never ends up holding a lock it
	// cannot know about.
	if err := ctx.Err(); err != nil {
		return "", fmt.Errorf("cache: redis lock: %w", err)
	}
	token, err := newToken()
	if err != nil {
		return "", err
	}
	took, err := redisLock.Run(ctx, r.client, []string{lockKey(name)}, token, ttl.Milliseconds()).Int()
	if err != nil {
		return "", r.wrap("lock", err)
	}
	if took == 0 {
		return "", ErrLockHeld
	}
	return token, nil
}

// lockScript takes the lock for ARGV[1] unless someone else holds it. A
// plain SET NX is not safe to retry: when its reply is lost on the way and
// go-redis sends it again, the second finds the first's lock and the
// caller waits a whole lease on a lock it holds. The script answers a
// retry with the same token as taken.
const lockScript = `local holder = redis.call("GET", KEYS[1])
if holder == false then
	redis.call("SET", KEYS[1], ARGV[1], "PX", ARGV[2])
	return 1
end
if holder == ARGV[1] then
	return 1
end
return 0`

var redisLock = redis.NewScript(lockScript)

// Unlock implements Cache.
func (r *Redis) Unlock(ctx context.Context, name, token string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("cache: redis unlock: %w", err)
	}
	if err := r.unlock.Run(ctx, r.client, []string{lockKey(name)}, token).Err(); err != nil {
		return r.wrap("unlock", err)
	}
	return nil
}

// Close closes the connection pool. It is safe to call more than once.
func (r *Redis) Close() error {
	r.closeOnce.Do(func() {
		if err := r.client.Close(); err != nil {
			r.closeErr = fmt.Errorf("cache: redis close: %w", err)
		}
	})
	return r.closeErr
}

// wrap names the operation and the server: "connection refused" alone does
// not say which of a worker's dependencies is down.
func (r *Redis) wrap(op string, err error) error {
	if errors.Is(err, redis.ErrClosed) {
		return fmt.Errorf("cache: redis %s: %w (%w)", op, errClosed, err)
	}
	return fmt.Errorf("cache: redis %s at %s: %w", op, r.addr, err)
}
