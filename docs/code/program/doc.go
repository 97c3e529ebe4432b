// Command program is the README's short program, compiled: docs/code's
// test checks that the README shows this file as it is.
package main
