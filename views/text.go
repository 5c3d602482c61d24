package views

import (
	"strings"
	"unicode/utf8"
)

// foldLimit is the length above which a message is folded (FoldedText).
const foldLimit = 240

// foldText is the head FoldedText shows of s, and whether the rest is folded: a text
// longer than foldLimit or of several lines shows its first line up to the end of its
// first sentence (or foldLimit runes, cut at a space, with an ellipsis).
func foldText(s string) (string, bool) {
	line, _, multi := strings.Cut(strings.TrimSpace(s), "\n")
	if !multi && utf8.RuneCountInString(s) <= foldLimit {
		return s, false
	}
	if i := strings.Index(line, ". "); i >= 0 && i < foldLimit {
		return line[:i+1], true
	}
	if utf8.RuneCountInString(line) <= foldLimit {
		return line, true
	}
	r := []rune(line)[:foldLimit]
	head := string(r)
	if i := strings.LastIndexByte(head, ' '); i > foldLimit/2 {
		head = head[:i]
	}
	return head + " …", true
}
