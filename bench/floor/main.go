// Command floor is the HTTP path with no engine: a loopback server that
// answers POST /v1/executions?shape=NAME with the stream the runner sent for
// that shape, recorded in DIR/NAME.ndjson, and does nothing else. It reads
// the request body whole, writes the first line (accepted) and flushes it,
// then writes the rest at once, as the runner's Writer does for a burst
// that ends before its flush interval.
//
// bench/compare.sh times it beside the runner, in the same rounds and over
// the same kind of connection, so that a run says what carrying the same
// bytes through loopback to curl costs on that machine at that moment: a
// server that computed nothing could not be faster.
//
//	floor -dir DIR -addr 127.0.0.1:0
//
// It prints "floor: listening on http://ADDR" once it listens.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"
)

func main() {
	dir := flag.String("dir", ".", "the directory of recorded streams, NAME.ndjson")
	addr := flag.String("addr", "127.0.0.1:0", "the address to listen on")
	flag.Parse()
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("floor: listening on http://%s\n", ln.Addr())
	srv := &http.Server{Handler: handler(*dir), ReadHeaderTimeout: 10 * time.Second}
	log.Fatal(srv.Serve(ln))
}

// handler serves the streams recorded in dir, each read once, when first
// asked for, and kept.
func handler(dir string) http.Handler {
	var mu sync.Mutex
	streams := map[string][]byte{}
	load := func(name string) ([]byte, error) {
		mu.Lock()
		defer mu.Unlock()
		if b, ok := streams[name]; ok {
			return b, nil
		}
		if name == "" || filepath.Base(name) != name {
			return nil, fmt.Errorf("shape %q: want a file name", name)
		}
		b, err := os.ReadFile(filepath.Join(dir, name+".ndjson"))
		if err != nil {
			return nil, err
		}
		streams[name] = b
		return b, nil
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/capabilities", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"version":1}`+"\n")
	})
	mux.HandleFunc("POST /v1/executions", func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.ReadAll(r.Body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		stream, err := load(r.URL.Query().Get("shape"))
		if err != nil {
			http.Error(w, err.Error(), http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "application/x-ndjson")
		first := bytes.IndexByte(stream, '\n') + 1
		w.Write(stream[:first])
		http.NewResponseController(w).Flush()
		w.Write(stream[first:])
	})
	return mux
}
