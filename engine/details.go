package engine

import (
	"github.com/runnerd/lambda-runner/protocol"
)

// detailList collects the problems found before acceptance.
type detailList struct {
	inv protocol.Invalid
}

func (d *detailList) add(path, format string, args ...any) {
	d.inv.Add(path, format, args...)
}

func (d *detailList) len() int { return len(d.inv.Details) }

func (d *detailList) err() error {
	if len(d.inv.Details) == 0 {
		return nil
	}
	inv := d.inv
	return &inv
}

// addErr records err under path, spreading joined errors and field errors
// into separate details.
func (d *detailList) addErr(path string, err error) {
	if err == nil {
		return
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			d.addErr(path, e)
		}
		return
	}
	// The adapters' own field errors carry the request path they found the
	// problem at, and messages already free of secrets.
	if fe, ok := err.(*protocol.Detail); ok {
		d.add(fe.Path, "%s", fe.Message)
		return
	}
	if inv, ok := err.(*protocol.Invalid); ok {
		d.inv.Details = append(d.inv.Details, inv.Details...)
		return
	}
	d.add(path, "%v", err)
}
