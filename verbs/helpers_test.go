package verbs_test

import "time"

func sleepBriefly() { time.Sleep(time.Millisecond) }
