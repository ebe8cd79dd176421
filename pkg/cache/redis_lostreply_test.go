package cache_test

import (
	"bytes"
	"errors"
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/autocoder/autocoder/internal/testredis"
	"github.com/autocoder/autocoder/pkg/cache"
)

// TestRedisLockSurvivesALostReply: when the reply to the command that
// takes a lock is lost on the way (the connection drops after the server
// took the lock) and go-redis sends the command again, the caller holds
// the lock; before, the retry found the lock its first attempt had taken
// and the caller waited a whole lease on itself. Another caller still
// finds the lock held.
func TestRedisLockSurvivesALostReply(t *testing.T) {
	t.Parallel()
	srv := testredis.StartServer(t)
	const name = "lost-reply-lock"
	p := newReplyDropper(t, srv.Addr(), []byte(name))
	u, err := url.Parse(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	u.Host = p.addr
	c := openRedis(t, u.String())
	ctx := t.Context()

	// Taken and given back once first, so that the server knows the lock's
	// script: the reply dropped below is the one to the command that
	// takes the lock, not a NOSCRIPT.
	warm, err := c.TryLock(ctx, "warm-up", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Unlock(ctx, "warm-up", warm); err != nil {
		t.Fatal(err)
	}

	p.arm()
	token, err := c.TryLock(ctx, name, time.Minute)
	if err != nil {
		t.Fatalf("TryLock after a lost reply: %v, want the lock", err)
	}
	if !p.dropped.Load() {
		t.Fatal("no reply was dropped: the test did not test anything")
	}
	if _, err := c.TryLock(ctx, name, time.Minute); !errors.Is(err, cache.ErrLockHeld) {
		t.Fatalf("a second caller: err = %v, want ErrLockHeld", err)
	}
	if err := c.Unlock(ctx, name, token); err != nil {
		t.Fatal(err)
	}
	if again, err := c.TryLock(ctx, name, time.Minute); err != nil {
		t.Fatalf("TryLock after Unlock: %v", err)
	} else {
		_ = c.Unlock(ctx, name, again)
	}
}

// replyDropper is a TCP proxy to a Redis server that, once armed, closes
// the connection that sends the first command holding marker as soon as
// the server replies to it, without passing the reply on.
type replyDropper struct {
	addr    string
	marker  []byte
	armed   atomic.Bool
	dropped atomic.Bool
}

func newReplyDropper(t *testing.T, target string, marker []byte) *replyDropper {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &replyDropper{addr: ln.Addr().String(), marker: marker}
	var wg sync.WaitGroup
	t.Cleanup(func() { _ = ln.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			client, err := ln.Accept()
			if err != nil {
				return
			}
			server, err := net.Dial("tcp", target)
			if err != nil {
				_ = client.Close()
				continue
			}
			wg.Go(func() { p.pipe(client, server) })
		}
	})
	return p
}

func (p *replyDropper) arm() { p.armed.Store(true) }

func (p *replyDropper) pipe(client, server net.Conn) {
	defer client.Close()
	defer server.Close()
	var drop atomic.Bool
	go func() {
		buf := make([]byte, 32<<10)
		for {
			n, err := client.Read(buf)
			if n > 0 {
				if bytes.Contains(buf[:n], p.marker) && p.armed.CompareAndSwap(true, false) {
					drop.Store(true) // before the command reaches the server
				}
				if _, werr := server.Write(buf[:n]); werr != nil {
					return
				}
			}
			if err != nil {
				_ = server.Close()
				return
			}
		}
	}()
	buf := make([]byte, 32<<10)
	for {
		n, err := server.Read(buf)
		if n > 0 && drop.Load() {
			p.dropped.Store(true)
			return // the server has answered; the client never hears it
		}
		if n > 0 {
			if _, werr := client.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}
