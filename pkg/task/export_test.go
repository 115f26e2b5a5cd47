package task

// ShallowAction is shallowAction, for the tests of package task_test.
var ShallowAction = shallowAction
