// Command called calls a function with a known vulnerability
// (golang.org/x/text v0.3.7's language.ParseAcceptLanguage, GO-2022-1059):
// the fixture that proves the vulnerability check fails when it should.
package main

import (
	"fmt"

	"golang.org/x/text/language"
)

func main() {
	tags, _, err := language.ParseAcceptLanguage("en-US,en;q=0.9")
	fmt.Println(tags, err)
}
