// Package workspacepath is the one statement of what a code workspace
// takes: which paths name a file in it and how large it may grow. The
// pack loader checks a pack's workspace: section with it and
// runtime/workspace checks every tool call with it, so a pack that loads
// never seeds a workspace its tools would then refuse.
package workspacepath

import (
	"fmt"
	"path"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Limits of a workspace.
const (
	MaxPathBytes = 256     // bytes in a path as written
	MaxFileBytes = 1 << 20 // bytes in one file
	MaxFiles     = 200     // files in a workspace
)

// Rel checks p against a workspace rooted at root (an absolute folder
// such as /workspace) and returns it clean and relative to the root. It
// accepts "a.js", "./a.js" and "<root>/a.js"; it refuses anything outside
// the root, any "..", and any path that is not already a plain clean
// relative one once the root prefix is gone, rather than cleaning it: a
// model that writes "src//a.js" or "src/./a.js" is told so, instead of
// editing a file it did not name exactly. The error says what is wrong in
// words a model can act on.
func Rel(root, p string) (string, error) {
	switch {
	case p == "":
		return "", fmt.Errorf("the path is empty; give a file path such as index.js")
	case len(p) > MaxPathBytes:
		return "", fmt.Errorf("the path is %d bytes long; paths are at most %d bytes", len(p), MaxPathBytes)
	case !utf8.ValidString(p):
		return "", fmt.Errorf("the path %q is not valid UTF-8", p)
	}
	for _, r := range p {
		switch {
		case unicode.IsControl(r) || unicode.Is(unicode.Cf, r):
			return "", fmt.Errorf("the path %q contains the control character %U; paths are plain text", p, r)
		case r == '\\':
			return "", fmt.Errorf("the path %q contains a backslash; separate folders with /, as in src/a.js", p)
		case r == '~':
			return "", fmt.Errorf("the path %q contains ~; there is no home folder, only %s", p, root)
		}
	}
	rel := p
	if strings.HasPrefix(p, "/") {
		prefix := root
		if !strings.HasSuffix(prefix, "/") {
			prefix += "/"
		}
		if p == root || p == prefix {
			return "", fmt.Errorf("the path %q is the folder %s itself; name a file in it", p, root)
		}
		if !strings.HasPrefix(p, prefix) {
			return "", fmt.Errorf("the path %q is outside %s; only files in %s can be opened or written", p, root, root)
		}
		rel = p[len(prefix):]
	}
	rel = strings.TrimPrefix(rel, "./")
	if rel == "" || rel == "." {
		return "", fmt.Errorf("the path %q is the folder %s itself; name a file in it", p, root)
	}
	for _, part := range strings.Split(rel, "/") {
		if part == ".." {
			return "", fmt.Errorf("the path %q contains ..; name files from %s down, as in src/a.js", p, root)
		}
	}
	if strings.HasPrefix(rel, "/") || rel != path.Clean(rel) {
		return "", fmt.Errorf("the path %q has an empty or . part or ends in /; write it plainly, as in src/a.js", p)
	}
	return rel, nil
}
