// Package console is a test suite: the reflector's web console (app/console)
// in a real Chromium (Debian's chromium, driven through the DevTools protocol
// by chromedp) against a real fabric in network namespaces: every page loads
// without a console error and shows the fabric's zones, devices and
// sessions; a zone change made with inofctl reaches the open events page
// and the who-sees-whom matrix without a reload; a viewer writes nothing.
// Screenshots of every page at a laptop's and a phone's width are kept in
// $INOF_ARTIFACTS/console (or a temporary directory the test logs).
package console
