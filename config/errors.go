package config

import "strconv"

// Error is a mistake in a configuration file, located by line.
//
// Parse and Load return a single *Error, or several joined with
// [errors.Join] (one per line of the message, in line order); [errors.As]
// finds the first.
type Error struct {
	// File is the file name given to [Load] ("" for [Parse]).
	File string
	// Line is the 1-based line of the mistake; 0 for an empty file.
	Line int
	// Err describes the mistake.
	Err error
}

// Error returns "FILE:LINE: message" ("line LINE: message" without a file
// name).
func (e *Error) Error() string {
	var p string
	switch {
	case e.File != "" && e.Line > 0:
		p = e.File + ":" + strconv.Itoa(e.Line)
	case e.File != "":
		p = e.File
	case e.Line > 0:
		p = "line " + strconv.Itoa(e.Line)
	default:
		return e.Err.Error()
	}
	return p + ": " + e.Err.Error()
}

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }
