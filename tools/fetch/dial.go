package fetch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"syscall"
	"time"
)

// Resolver looks up the addresses of a host. *net.Resolver satisfies it.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// dialFunc dials a concrete ip:port; it never sees a host name. hostAllowed
// says an allow-list host-name entry matched the name the address was
// resolved from, which lets the socket check admit a private address.
type dialFunc func(ctx context.Context, network, addr string, hostAllowed bool) (net.Conn, error)

// safeDialer resolves the host itself, checks every resolved address against
// the policy, and dials the checked IP. There is no second lookup between the
// check and the connect, so DNS rebinding cannot slip a private address in.
// As a second line, the net.Dialer's Control hook re-checks the socket
// address the kernel is about to connect to.
type safeDialer struct {
	allow    *AllowList
	resolver Resolver
	dial     dialFunc
	log      *slog.Logger
}

func newSafeDialer(allow *AllowList, r Resolver, timeout time.Duration, log *slog.Logger) *safeDialer {
	d := &safeDialer{allow: allow, resolver: r, log: log}
	d.dial = func(ctx context.Context, network, addr string, hostAllowed bool) (net.Conn, error) {
		_, port, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		nd := &net.Dialer{
			Timeout:   timeout,
			KeepAlive: 30 * time.Second,
			Control: func(network, address string, _ syscall.RawConn) error {
				ap, err := netip.ParseAddrPort(address)
				if err != nil {
					return fmt.Errorf("%w: unparsable socket address %q", ErrBlockedAddress, address)
				}
				return d.allow.permitted(ap.Addr(), port, hostAllowed)
			},
		}
		return nd.DialContext(ctx, network, addr)
	}
	return d
}

// DialContext implements http.Transport.DialContext.
func (d *safeDialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidURL, err)
	}
	var ips []netip.Addr
	hostAllowed := false
	if ip, err := netip.ParseAddr(host); err == nil {
		ips = []netip.Addr{ip}
	} else {
		hostAllowed = d.allow.allowsHost(host, port)
		network4or6 := "ip"
		switch network {
		case "tcp4":
			network4or6 = "ip4"
		case "tcp6":
			network4or6 = "ip6"
		}
		ips, err = d.resolver.LookupNetIP(ctx, network4or6, host)
		if err != nil {
			return nil, fmt.Errorf("fetch: resolve %s: %w", host, err)
		}
		if len(ips) == 0 {
			return nil, fmt.Errorf("fetch: resolve %s: no addresses", host)
		}
	}
	// Refuse the whole name if any answer is forbidden: a name that mixes
	// public and private answers is suspect, and refusing is easier to
	// reason about than silently dialling a subset.
	for _, ip := range ips {
		if err := d.allow.permitted(ip, port, hostAllowed); err != nil {
			d.log.Warn("fetch: blocked dial", "host", host, "ip", ip.String(), "err", err)
			return nil, fmt.Errorf("dial %s: %w", host, err)
		}
	}
	var errs []error
	for _, ip := range ips {
		conn, err := d.dial(ctx, network, net.JoinHostPort(ip.Unmap().String(), port), hostAllowed)
		if err == nil {
			return conn, nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return nil, fmt.Errorf("dial %s: %w", host, errors.Join(errs...))
}
