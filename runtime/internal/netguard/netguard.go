// Package netguard keeps connections the server opens on a client's word
// (DayOne webhooks) on the public internet. A URL a client names could
// otherwise reach the server's own loopback ports, its private network or
// a cloud metadata service (169.254.169.254) and report back what it
// found.
//
// The check belongs at dial time, on the address actually connected to
// after DNS resolution: a check of the URL's host name alone is passed by
// a name that resolves to a private address, or by one whose answer
// changes between the check and the dial (DNS rebinding).
package netguard

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"syscall"
	"time"
)

// ErrRefused is wrapped by every refusal, so callers can tell a refused
// address from a failed connection with errors.Is.
var ErrRefused = errors.New("address not allowed")

type special struct {
	p    netip.Prefix
	what string
	// embedded4 is the bit offset of an IPv4 address carried inside this
	// IPv6 prefix (NAT64, 6to4): such an address is as good as the IPv4
	// address it carries, no better.
	embedded4 int
}

// specials are the IANA special-purpose ranges (RFC 6890 and its
// updates) a webhook has no business reaching, most specific first: the
// first that contains an address decides. IPv4-mapped IPv6 addresses are
// unmapped before they are looked up.
var specials = func() []special {
	var out []special
	for _, s := range []struct {
		p, what   string
		embedded4 int
	}{
		{"0.0.0.0/8", "this-network", -1},
		{"10.0.0.0/8", "private", -1},
		{"100.64.0.0/10", "shared (CGNAT)", -1},
		{"127.0.0.0/8", "loopback", -1},
		{"169.254.0.0/16", "link-local", -1},
		{"172.16.0.0/12", "private", -1},
		{"192.0.0.0/24", "IETF protocol assignment", -1},
		{"192.0.2.0/24", "documentation", -1},
		{"192.88.99.0/24", "6to4 relay", -1},
		{"192.168.0.0/16", "private", -1},
		{"198.18.0.0/15", "benchmarking", -1},
		{"198.51.100.0/24", "documentation", -1},
		{"203.0.113.0/24", "documentation", -1},
		{"224.0.0.0/4", "multicast", -1},
		{"240.0.0.0/4", "reserved", -1},

		{"::/128", "unspecified", -1},
		{"::1/128", "loopback", -1},
		{"64:ff9b::/96", "NAT64", 96},
		{"64:ff9b:1::/48", "local NAT64", -1},
		// The rest of ::/8 holds the deprecated IPv4-compatible form
		// (::a.b.c.d), which some stacks still route to IPv4.
		{"::/8", "reserved", -1},
		{"100::/64", "discard-only", -1},
		{"2001:db8::/32", "documentation", -1},
		// Teredo (2001::/32) and other protocol assignments.
		{"2001::/23", "IETF protocol assignment", -1},
		{"2002::/16", "6to4", 16},
		{"3fff::/20", "documentation", -1},
		{"fc00::/7", "private (unique local)", -1},
		{"fe80::/10", "link-local", -1},
		{"fec0::/10", "site-local", -1},
		{"ff00::/8", "multicast", -1},
	} {
		out = append(out, special{netip.MustParsePrefix(s.p), s.what, s.embedded4})
	}
	return out
}()

// globalUnicast6 is where every routable IPv6 unicast address is today;
// anything outside it (and outside the NAT64 prefix) is refused.
var globalUnicast6 = netip.MustParsePrefix("2000::/3")

// Classify says why ip must not be dialled ("loopback", "private", ...),
// or returns "" for a public unicast address.
func Classify(ip netip.Addr) string {
	if !ip.IsValid() {
		return "invalid"
	}
	ip = ip.WithZone("").Unmap()
	for _, s := range specials {
		if !s.p.Contains(ip) {
			continue
		}
		if s.embedded4 < 0 {
			return s.what
		}
		b := ip.As16()
		v4 := netip.AddrFrom4([4]byte(b[s.embedded4/8 : s.embedded4/8+4]))
		if why := Classify(v4); why != "" {
			return s.what + " of " + why
		}
		return ""
	}
	if ip.Is6() && !globalUnicast6.Contains(ip) {
		return "not global unicast"
	}
	return ""
}

// Control is a net.Dialer Control function: it runs after the socket is
// made and before it connects, with the resolved address, and refuses
// anything Classify objects to. A refused address is never connected to.
func Control(network, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		// Fail closed: a TCP or UDP dial always names an IP here.
		return fmt.Errorf("netguard: %s address %q: %w", network, address, ErrRefused)
	}
	if why := Classify(ap.Addr()); why != "" {
		return fmt.Errorf("netguard: %s is %s: %w", ap.Addr(), why, ErrRefused)
	}
	return nil
}

// Dialer is a net.Dialer that connects only to public addresses.
func Dialer(timeout time.Duration) *net.Dialer {
	return &net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second, Control: Control}
}
