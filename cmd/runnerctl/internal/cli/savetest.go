package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"sync"

	"github.com/runnerd/lambda-runner/cmd/runnerctl/internal/wftest"
	"github.com/runnerd/lambda-runner/protocol"
)

// savedRun keeps the events of a run for --save-test.
type savedRun struct {
	mu     sync.Mutex
	events []protocol.Event
}

func (s *savedRun) observe(ev protocol.Event) {
	s.mu.Lock()
	s.events = append(s.events, ev)
	s.mu.Unlock()
}

// traced is body with "trace": true, so that node outputs are in the
// events --save-test pins nodes to.
func traced(body []byte) ([]byte, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, err
	}
	m["trace"] = json.RawMessage("true")
	return json.Marshal(m)
}

// save writes the case of the finished run to path.
func (s *savedRun) save(path, name string, body []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, err := wftest.FromRun(name, body, s.events)
	if err != nil {
		return fmt.Errorf("--save-test: %w", err)
	}
	if err := os.WriteFile(path, c, 0o644); err != nil {
		return fmt.Errorf("--save-test: %w", err)
	}
	return nil
}
