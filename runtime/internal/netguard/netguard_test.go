package netguard

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"
)

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		ip      string
		refused bool
	}{
		// IPv4.
		{"8.8.8.8", false},
		{"1.1.1.1", false},
		{"93.184.216.34", false},
		{"0.0.0.0", true},
		{"0.1.2.3", true},
		{"127.0.0.1", true},
		{"127.255.255.254", true},
		{"10.0.0.1", true},
		{"172.16.0.1", true},
		{"172.31.255.255", true},
		{"172.32.0.1", false},
		{"192.168.1.1", true},
		{"169.254.169.254", true},
		{"100.64.0.1", true},
		{"100.127.255.255", true},
		{"100.128.0.1", false},
		{"192.0.0.8", true},
		{"192.0.2.1", true},
		{"198.18.0.1", true},
		{"198.51.100.7", true},
		{"203.0.113.9", true},
		{"224.0.0.1", true},
		{"239.255.255.250", true},
		{"240.0.0.1", true},
		{"255.255.255.255", true},

		// IPv6.
		{"2606:4700:4700::1111", false},
		{"2001:4860:4860::8888", false},
		{"::", true},
		{"::1", true},
		{"::127.0.0.1", true}, // IPv4-compatible, deprecated
		{"fe80::1", true},
		{"fe80::1%eth0", true},
		{"fc00::1", true},
		{"fd12:3456::1", true},
		{"fec0::1", true},
		{"ff02::1", true},
		{"2001:db8::1", true},
		{"2001::1", true}, // Teredo
		{"100::1", true},
		{"3fff::1", true},
		{"4000::1", true}, // outside 2000::/3

		// IPv4-mapped IPv6: as the IPv4 address.
		{"::ffff:8.8.8.8", false},
		{"::ffff:127.0.0.1", true},
		{"::ffff:169.254.169.254", true},
		{"::ffff:10.0.0.1", true},
		{"::ffff:100.64.0.1", true},
		{"::ffff:0.0.0.0", true},
		{"::ffff:7f00:1", true},

		// NAT64 and 6to4 carry an IPv4 address: as good as it is.
		{"64:ff9b::8.8.8.8", false},
		{"64:ff9b::127.0.0.1", true},
		{"64:ff9b::a9fe:a9fe", true}, // 169.254.169.254
		{"64:ff9b:1::1", true},
		{"2002:0808:0808::1", false},
		{"2002:7f00:0001::1", true},
		{"2002:c0a8:0101::1", true}, // 192.168.1.1
	} {
		ip := netip.MustParseAddr(tc.ip)
		why := Classify(ip)
		if (why != "") != tc.refused {
			t.Errorf("Classify(%s) = %q, want refused %v", tc.ip, why, tc.refused)
		}
	}
	if Classify(netip.Addr{}) == "" {
		t.Error("the zero Addr is allowed")
	}
}

// countingListener is a loopback TCP listener that counts the connections
// it accepts.
func countingListener(t *testing.T, network, addr string) (net.Listener, *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen(network, addr)
	if err != nil {
		t.Skipf("no %s listener on %s: %v", network, addr, err)
	}
	t.Cleanup(func() { ln.Close() })
	var n atomic.Int64
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			n.Add(1)
			c.Close()
		}
	}()
	return ln, &n
}

// TestControlRefusesAtDial dials through Control: loopback listeners,
// named by address and by a name that resolves to them, see no
// connection; addresses that would hang or go elsewhere (metadata,
// private) fail with ErrRefused before any connect.
func TestControlRefusesAtDial(t *testing.T) {
	ln4, n4 := countingListener(t, "tcp4", "127.0.0.1:0")
	ln6, n6 := countingListener(t, "tcp6", "[::1]:0")
	_, port, _ := net.SplitHostPort(ln4.Addr().String())
	d := Dialer(waitLimit)
	ctx := context.Background()
	for _, addr := range []string{
		ln4.Addr().String(),
		ln6.Addr().String(),
		net.JoinHostPort("localhost", port),
		"[::ffff:127.0.0.1]:" + port,
		"169.254.169.254:80",
		"10.0.0.1:80",
		"[fe80::1]:80",
	} {
		c, err := d.DialContext(ctx, "tcp", addr)
		if err == nil {
			c.Close()
			t.Errorf("dial %s: connected", addr)
			continue
		}
		if !errors.Is(err, ErrRefused) {
			t.Errorf("dial %s: %v, want ErrRefused", addr, err)
		}
	}
	// The counters work: an unguarded dial is counted, and the guarded
	// ones before it were not.
	for _, c := range []struct {
		ln net.Listener
		n  *atomic.Int64
	}{{ln4, n4}, {ln6, n6}} {
		conn, err := net.Dial("tcp", c.ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		conn.Close()
		deadline := time.Now().Add(waitLimit)
		for c.n.Load() == 0 && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		if got := c.n.Load(); got != 1 {
			t.Errorf("%s accepted %d connections, want only the unguarded one", c.ln.Addr(), got)
		}
	}
}

// waitLimit bounds waits; it is a failure deadline, not a timing check.
const waitLimit = 20 * time.Second

func TestControlFailsClosed(t *testing.T) {
	if err := Control("unix", "/tmp/sock", nil); !errors.Is(err, ErrRefused) {
		t.Fatalf("unix socket: %v", err)
	}
	if err := Control("tcp", "8.8.8.8:443", nil); err != nil {
		t.Fatalf("public address: %v", err)
	}
}
