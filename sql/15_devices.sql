-- GPU drivers are loaded with dlopen: without one (this machine) the
-- extension works, silvan.devices() lists nothing and says why, and
-- asking to tune for a GPU target is refused by name
SELECT * FROM silvan.devices();
SELECT * FROM silvan.tune('binary_logistic', target => 'rocm');
