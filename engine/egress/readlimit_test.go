package egress

import (
	"errors"
	"io"
	"strings"
	"testing"
)

func TestReadLimit(t *testing.T) {
	body := func(n int) io.ReadCloser { return io.NopCloser(strings.NewReader(strings.Repeat("x", n))) }
	tests := []struct {
		name     string
		max      int64
		inFlight int64
		bodies   []int // read one after the other, each closed
		want     string
		read     int // bytes handed on, all bodies
	}{
		{name: "under the limit", max: 100, bodies: []int{60, 40}, read: 100},
		{name: "one body over", max: 100, bodies: []int{101}, want: "reply exceeds 100 bytes", read: 0},
		{name: "bodies together over", max: 100, bodies: []int{60, 60}, want: "reply exceeds 100 bytes", read: 60},
		{name: "in flight released on close", inFlight: 100, bodies: []int{80, 80}, read: 160},
		{name: "no limit", bodies: []int{1 << 20}, read: 1 << 20},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var parent *ReadLimit
			if tt.inFlight > 0 {
				parent = NewInFlightLimit(tt.inFlight)
			}
			l := NewReadLimit(tt.max, "reply", parent)
			read := 0
			var err error
			for _, n := range tt.bodies {
				b := l.Body(body(n))
				var got []byte
				got, err = io.ReadAll(b)
				read += len(got)
				_ = b.Close()
				if err != nil {
					break
				}
			}
			if read != tt.read {
				t.Errorf("handed on %d bytes, want %d", read, tt.read)
			}
			var rl *ReadLimitError
			switch {
			case tt.want == "" && (err != nil || l.Err() != nil):
				t.Errorf("err %v, Err() %v, want none", err, l.Err())
			case tt.want != "" && (!errors.As(err, &rl) || l.Err() == nil || l.Err().Error() != tt.want):
				t.Errorf("err %v, Err() %v, want %q", err, l.Err(), tt.want)
			}
			if tt.want != "" {
				select {
				case <-l.Done():
				default:
					t.Error("Done not closed after the limit was crossed")
				}
			}
		})
	}
}

// Concurrent readers share an in-flight limit: the one that crosses it
// fails, naming the in-flight bound.
func TestReadLimitInFlight(t *testing.T) {
	pool := NewInFlightLimit(100)
	a := NewReadLimit(0, "a", pool).Body(io.NopCloser(strings.NewReader(strings.Repeat("x", 80))))
	b := NewReadLimit(0, "b", pool).Body(io.NopCloser(strings.NewReader(strings.Repeat("x", 80))))
	if _, err := io.ReadAll(a); err != nil {
		t.Fatal(err)
	}
	_, err := io.ReadAll(b) // a is not closed: 160 bytes in flight
	var rl *ReadLimitError
	if !errors.As(err, &rl) || !rl.InFlight || !strings.Contains(err.Error(), "being read at once exceed 100") {
		t.Errorf("err %v, want the in-flight limit", err)
	}
}

// A costed limit charges its in-flight parent what decoding will hold (per
// byte and per JSON value), keeps the charge past Close until Release, and
// names the reply when it alone is over the in-flight limit.
func TestReadLimitCosted(t *testing.T) {
	read := func(l *ReadLimit, text string) error {
		b := l.Body(io.NopCloser(strings.NewReader(text)))
		_, err := io.ReadAll(b)
		_ = b.Close()
		return err
	}
	cost := Cost{PerByte: 2, PerValue: 100}
	pool := NewInFlightLimit(1000)
	a := NewReadLimit(0, "model reply", pool).Costed(cost)
	if err := read(a, `[{},{}]`); err != nil { // 7 bytes, 3 values: 314
		t.Fatal(err)
	}
	if got := pool.n.Load(); got != 314 {
		t.Errorf("after Close the pool holds %d, want 314 (held until Release)", got)
	}
	b := NewReadLimit(0, "model reply", pool).Costed(cost)
	err := read(b, strings.Repeat(`[1,`, 3)+`1]`) // over with a's 314
	var rl *ReadLimitError
	if !errors.As(err, &rl) || !rl.InFlight || err.Error() != "replies being read at once would take more than 1000 bytes to decode" {
		t.Errorf("err %v, want the in-flight limit's, as decoded", err)
	}
	a.Release()
	b.Release()
	a.Release() // twice gives nothing back twice
	if got := pool.n.Load(); got != 0 {
		t.Errorf("after Release the pool holds %d, want 0", got)
	}
	c := NewReadLimit(0, "model reply", pool).Costed(cost)
	err = read(c, "["+strings.Repeat(`{},`, 9)+`{}]`)
	if !errors.As(err, &rl) || rl.InFlight || err.Error() != "model reply would take more than 1000 bytes to decode" {
		t.Errorf("err %v, want the reply's own failure", err)
	}
	c.Release()
	// A weighed, uncosted body is given back on Close.
	d := NewReadLimit(0, "tool result", pool).Weighed()
	if err := read(d, `[{}]`); err != nil {
		t.Fatal(err)
	}
	if got := pool.n.Load(); got != 0 {
		t.Errorf("a weighed body's charge after Close is %d, want 0", got)
	}
	var none *ReadLimit
	none.Costed(cost).Release() // nil-safe
}
