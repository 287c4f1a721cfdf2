package switchagent

// DeviceCount is how many devices the agent's device table holds, of every
// switch, this one included. Unlike the API's device list it copies
// nothing, so it is cheap to poll.
func (a *Agent) DeviceCount() int { return a.table.Len() }
