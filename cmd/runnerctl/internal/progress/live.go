package progress

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// Live redraws a board in place on a terminal of Width columns and Height
// rows: it moves the cursor back over what it drew last and draws again.
// Lines are cut to the width, so that none wraps and the count of lines to
// move back over stays exact; a board taller than the screen shows its end.
type Live struct {
	W      io.Writer
	Width  int
	Height int

	drawn int
}

// Draw replaces the previous drawing with lines.
func (l *Live) Draw(lines []string) error {
	if max := l.Height - 1; max > 1 && len(lines) > max {
		hidden := len(lines) - (max - 1)
		lines = append([]string{fmt.Sprintf("… %d lines above", hidden)}, lines[hidden:]...)
	}
	var b strings.Builder
	if l.drawn > 0 {
		fmt.Fprintf(&b, "\x1b[%dF", l.drawn) // to the start of the first line drawn
	}
	b.WriteString("\x1b[J") // clear to the end of the screen
	for _, s := range lines {
		b.WriteString(cut(s, l.Width))
		b.WriteString("\r\n")
	}
	l.drawn = len(lines)
	_, err := io.WriteString(l.W, b.String())
	return err
}

func cut(s string, width int) string {
	if width <= 1 || utf8.RuneCountInString(s) < width {
		return s
	}
	r := []rune(s)
	return string(r[:width-2]) + "…"
}
