/*
Copyright The accel-dra Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

/*
 * Prints the size of every CNDev struct accel-dra passes to libcndev and
 * the offset of every field it sets or reads, as "<struct> <size>" and
 * "<struct>.<field> <offset>" lines, for the test that compares them with
 * the Go mirrors in cndev.go (unsafe.Sizeof/Offsetof).
 */
#include <stddef.h>
#include <stdio.h>

#include "cndev.h"

#define S(t) printf("%s %zu\n", #t, sizeof(t))
#define F(t, f) printf("%s.%s %zu\n", #t, #f, offsetof(t, f))

int main(void) {
	S(cndevCardInfo_t); F(cndevCardInfo_t, version); F(cndevCardInfo_t, number);
	S(cndevUUID_t); F(cndevUUID_t, version); F(cndevUUID_t, uuid); F(cndevUUID_t, ncsUUID64);
	S(cndevMemoryInfoV2_t); F(cndevMemoryInfoV2_t, physicalMemoryTotal); F(cndevMemoryInfoV2_t, reserved);
	S(cndevVersionInfo_t); F(cndevVersionInfo_t, version); F(cndevVersionInfo_t, driverMajorVersion);
	F(cndevVersionInfo_t, driverMinorVersion); F(cndevVersionInfo_t, driverBuildVersion);
	S(cndevCardCoreCount_t); F(cndevCardCoreCount_t, version); F(cndevCardCoreCount_t, count);
	S(cndevCardHealthState_t); F(cndevCardHealthState_t, version); F(cndevCardHealthState_t, health);
	F(cndevCardHealthState_t, deviceState); F(cndevCardHealthState_t, driverState);
	S(cndevCardHealthStateV2_t); F(cndevCardHealthStateV2_t, deviceState); F(cndevCardHealthStateV2_t, driverState);
	F(cndevCardHealthStateV2_t, overallHealth); F(cndevCardHealthStateV2_t, incident_count);
	F(cndevCardHealthStateV2_t, incidents); F(cndevCardHealthStateV2_t, reserved);
	S(cndevIncidentInfo_t); F(cndevIncidentInfo_t, health); F(cndevIncidentInfo_t, error);
	S(cndevDiagErrorDetail_t); F(cndevDiagErrorDetail_t, msg); F(cndevDiagErrorDetail_t, code);
	F(cndevDiagErrorDetail_t, severity);
	S(cndevPCIeInfoV2_t); F(cndevPCIeInfoV2_t, vendor); F(cndevPCIeInfoV2_t, domain); F(cndevPCIeInfoV2_t, bus);
	F(cndevPCIeInfoV2_t, device); F(cndevPCIeInfoV2_t, function); F(cndevPCIeInfoV2_t, reserved);
	S(cndevMLULinkStatusV2_t); F(cndevMLULinkStatusV2_t, macState); F(cndevMLULinkStatusV2_t, reserved);
	S(cndevMLULinkRemoteInfo_t); F(cndevMLULinkRemoteInfo_t, version); F(cndevMLULinkRemoteInfo_t, uuid);
	F(cndevMLULinkRemoteInfo_t, ncsUUID64); F(cndevMLULinkRemoteInfo_t, port_name);
	S(cndevSMLUMode_t); F(cndevSMLUMode_t, version); F(cndevSMLUMode_t, smluMode);
	S(cndevSMluInfo_t); F(cndevSMluInfo_t, version); F(cndevSMluInfo_t, profileId); F(cndevSMluInfo_t, instanceId);
	F(cndevSMluInfo_t, uuid); F(cndevSMluInfo_t, profileName); F(cndevSMluInfo_t, instanceName);
	F(cndevSMluInfo_t, devNodeName); F(cndevSMluInfo_t, mluQuota); F(cndevSMluInfo_t, memorySize); F(cndevSMluInfo_t, reserved);
	S(cndevSMluProfileIdInfo_t); F(cndevSMluProfileIdInfo_t, version); F(cndevSMluProfileIdInfo_t, count);
	F(cndevSMluProfileIdInfo_t, profileId);
	S(cndevSMluProfileInfo_t); F(cndevSMluProfileInfo_t, version); F(cndevSMluProfileInfo_t, profileId);
	F(cndevSMluProfileInfo_t, name); F(cndevSMluProfileInfo_t, totalCapacity); F(cndevSMluProfileInfo_t, remainCapacity);
	F(cndevSMluProfileInfo_t, mluQuota); F(cndevSMluProfileInfo_t, memorySize);
	S(cndevSMluSet_t); F(cndevSMluSet_t, version); F(cndevSMluSet_t, mluQuota); F(cndevSMluSet_t, memorySize);
	/* telemetry */
	S(cndevDevicePowerInfo_t); F(cndevDevicePowerInfo_t, usage); F(cndevDevicePowerInfo_t, reserved);
	S(cndevTemperatureInfo_t); F(cndevTemperatureInfo_t, version); F(cndevTemperatureInfo_t, board);
	F(cndevTemperatureInfo_t, chip); F(cndevTemperatureInfo_t, isp);
	S(cndevUtilizationInfo_t); F(cndevUtilizationInfo_t, version); F(cndevUtilizationInfo_t, averageCoreUtilization);
	F(cndevUtilizationInfo_t, coreUtilization);
	return 0;
}
