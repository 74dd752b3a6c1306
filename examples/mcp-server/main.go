// Command mcp-server is a small MCP server for trying tool nodes offline:
// it serves the tools echo, add and word_count over streamable HTTP on
// 127.0.0.1:3001/mcp, which examples/tool.json calls.
//
//	go run ./examples/mcp-server
package main

import (
	"context"
	"flag"
	"log"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type echoIn struct {
	Message string `json:"message" jsonschema:"the text to send back"`
}

type addIn struct {
	A float64 `json:"a" jsonschema:"the first addend"`
	B float64 `json:"b" jsonschema:"the second addend"`
}

type addOut struct {
	Sum float64 `json:"sum"`
}

type countIn struct {
	Text string `json:"text" jsonschema:"the text to count words in"`
}

type countOut struct {
	Words int `json:"words"`
}

func main() {
	addr := flag.String("addr", "127.0.0.1:3001", "listen address")
	flag.Parse()

	s := mcp.NewServer(&mcp.Implementation{Name: "runner-example", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Sends the message back."},
		func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Message}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "add", Description: "Adds two numbers."},
		func(_ context.Context, _ *mcp.CallToolRequest, in addIn) (*mcp.CallToolResult, addOut, error) {
			return nil, addOut{Sum: in.A + in.B}, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "word_count", Description: "Counts the words of a text."},
		func(_ context.Context, _ *mcp.CallToolRequest, in countIn) (*mcp.CallToolResult, countOut, error) {
			return nil, countOut{Words: len(strings.Fields(in.Text))}, nil
		})

	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	log.Printf("MCP server on http://%s/mcp (tools: echo, add, word_count)", *addr)
	log.Fatal(http.ListenAndServe(*addr, mux))
}
