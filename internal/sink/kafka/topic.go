package kafka

import (
	"errors"
	"fmt"
	"strings"
)

// maxTopicLen is the longest topic name Kafka accepts.
const maxTopicLen = 249

// Stream is one (source, account) pair the sink will receive records of.
// New computes each stream's topic from the template, so that Start can
// check or create every topic before the first Write.
type Stream struct {
	Source  string
	Account string
}

// topicTemplate is a parsed Config.Topic: literal text and placeholders.
type topicTemplate struct {
	parts []topicPart
}

type topicPart struct {
	literal string
	field   string // "source" or "account" when a placeholder
}

// parseTopicTemplate checks a template: braces balanced, only the {source}
// and {account} placeholders, and literal text made of characters a topic
// name may hold.
func parseTopicTemplate(s string) (topicTemplate, error) {
	if s == "" {
		return topicTemplate{}, errors.New("must not be empty")
	}
	var t topicTemplate
	rest := s
	for rest != "" {
		i := strings.IndexAny(rest, "{}")
		if i < 0 {
			t.parts = append(t.parts, topicPart{literal: rest})
			break
		}
		if i > 0 {
			t.parts = append(t.parts, topicPart{literal: rest[:i]})
		}
		if rest[i] == '}' {
			return topicTemplate{}, fmt.Errorf("%q has a '}' without '{'", s)
		}
		j := strings.IndexByte(rest[i:], '}')
		if j < 0 {
			return topicTemplate{}, fmt.Errorf("%q has a '{' without '}'", s)
		}
		name := rest[i+1 : i+j]
		switch name {
		case "source", "account":
			t.parts = append(t.parts, topicPart{field: name})
		default:
			return topicTemplate{}, fmt.Errorf("%q has an unknown placeholder {%s} (known: {source}, {account})", s, name)
		}
		rest = rest[i+j+1:]
	}
	for _, p := range t.parts {
		if p.field != "" {
			continue
		}
		for _, r := range p.literal {
			if !topicChar(r) {
				return topicTemplate{}, fmt.Errorf("%q holds %q, which a topic name cannot (letters, digits, '.', '_', '-')", s, r)
			}
		}
	}
	if name := t.name("x", "x"); name == "." || name == ".." {
		return topicTemplate{}, fmt.Errorf("%q is not a valid topic name", s)
	}
	return t, nil
}

// name renders the template for one stream. Characters of the source or
// account that a topic name cannot hold become '_'; a name over Kafka's 249
// characters is cut.
func (t topicTemplate) name(source, account string) string {
	var b strings.Builder
	for _, p := range t.parts {
		switch p.field {
		case "source":
			writeSanitized(&b, source)
		case "account":
			writeSanitized(&b, account)
		default:
			b.WriteString(p.literal)
		}
	}
	s := b.String()
	if len(s) > maxTopicLen {
		s = s[:maxTopicLen]
	}
	return s
}

func writeSanitized(b *strings.Builder, s string) {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if topicChar(rune(c)) {
			b.WriteByte(c)
		} else {
			b.WriteByte('_')
		}
	}
}

func topicChar(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-'
}
