// Package code holds the guide's Go fragments as code that compiles, and
// the tests that keep the guide true: every Go block of the README and of
// docs/ equals the fragment its marker names, and the generated reference
// pages (the command line, the HTTP API) equal what the binary and the
// OpenAPI document produce.
package code
