package main

import "runtime"

var runtimeVersion = runtime.Version()
