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
 * accel-dra's own declarations of the part of Cambricon CNDev (libcndev.so)
 * the agent calls: only these structs, constants and functions, each field
 * for field as in the public header cndev.h published in
 * Cambricon/mlu-exporter@934abae176b155624dd66fb093af47e0856e508f
 * pkg/cndev/include/cndev.h (the same header Cambricon's device plugin
 * builds against, Cambricon/cambricon-k8s-device-plugin@3c9ed24d
 * device-plugin/pkg/cndev). Written for accel-dra, not copied: the mock
 * library (mock_cndev.c) and the layout check (layout.c) build against it,
 * and pkg/vendors/cambricon/cndev.go mirrors every struct in Go.
 */
#ifndef ACCEL_DRA_CNDEV_H
#define ACCEL_DRA_CNDEV_H

#include <stdint.h>

#define CNDEV_VERSION_6 6
#define CNDEV_UUID_SIZE 37
#define CNDEV_MLUINSTANCE_PROFILE_NAME_BUFFER_SIZE 100
#define CNDEV_MLUINSTANCE_DEVICE_NODE_NAME_BUFFER_SIZE 100
#define CNDEV_MLU_REMOTE_PORT_NAME_LEN 256
#define CNDEV_MAC_ADDRESS_LEN 6

typedef int32_t cndevDevice_t;
typedef int32_t cndevMluInstance_t;

/* cndevRet_t: the values used here. */
typedef enum {
	CNDEV_SUCCESS = 0,
	CNDEV_ERROR_UNINITIALIZED = 4,
	CNDEV_ERROR_INVALID_ARGUMENT = 5,
	CNDEV_ERROR_INVALID_DEVICE_ID = 6,
	CNDEV_ERROR_UNKNOWN = 7,
	CNDEV_ERROR_INSUFFICIENT_SPACE = 9,
	CNDEV_ERROR_NOT_SUPPORTED = 10,
	CNDEV_ERROR_NOT_FOUND = 14,
	CNDEV_ERROR_IN_USE = 15,
	CNDEV_ERROR_DUPLICATE = 16,
} cndevRet_t;

typedef enum { CNDEV_FEATURE_DISABLED = 0, CNDEV_FEATURE_ENABLED = 1 } cndevEnableStatusEnum_t;
typedef enum { CNDEV_HEALTH_STATE_DEVICE_IN_PROBLEM = 0, CNDEV_HEALTH_STATE_DEVICE_GOOD = 1 } cndevHealthStateEnum_t;
typedef enum { CNDEV_HEALTH_STATE_DRIVER_RUNNING = 4 } cndevDriverHealthStateEnum_t;
typedef enum { CNDEV_MLULINK_MAC_STATE_DOWN = 0, CNDEV_MLULINK_MAC_STATE_UP = 1 } cndevMLULinkMACStateEnum_t;
typedef enum { CNDEV_MLULINK_SERDES_STATE_DISABLE = 0 } cndevMLULinkSerdesStateEnum_t;
typedef enum { CNDEV_MLULINK_PRESENCE_STATE_ABSENT = 0 } cndevMLULinkPresenceStateEnum_t;
typedef enum { CNDEV_SMLU_MAX = 0, CNDEV_SMLU_USAGE = 1, CNDEV_SMLU_ITEM_COUNT } cndevSMluItemEnum_t;

typedef struct {
	int32_t version;
	uint32_t number;
} cndevCardInfo_t;

typedef struct {
	int32_t version;
	uint8_t uuid[CNDEV_UUID_SIZE];
	uint64_t ncsUUID64;
} cndevUUID_t;

typedef struct {
	int64_t physicalMemoryTotal; /* MB */
	int64_t physicalMemoryUsed;
	int64_t reservedMemory;
	int64_t virtualMemoryTotal;
	int64_t virtualMemoryUsed;
	uint64_t globalMemory;
	uint64_t reserved[16];
} cndevMemoryInfoV2_t;

typedef struct {
	int32_t version;
	uint32_t mcuMajorVersion;
	uint32_t mcuMinorVersion;
	uint32_t mcuBuildVersion;
	uint32_t driverMajorVersion;
	uint32_t driverMinorVersion;
	uint32_t driverBuildVersion;
} cndevVersionInfo_t;

typedef struct {
	int32_t version;
	int32_t count;
} cndevCardCoreCount_t;

typedef struct {
	int32_t version;
	int32_t health;
	cndevHealthStateEnum_t deviceState;
	cndevDriverHealthStateEnum_t driverState;
} cndevCardHealthState_t;

/* cndevGetCardHealthStateV2 (mlu-exporter@934abae pkg/cndev/include/cndev.h
 * lines 625-709): the V1 states plus an overall grade with a warning
 * level and the incidents behind it. The incident codes (cndevHealthError_t,
 * CNDEV_FR_OK = 0 … CNDEV_FR_DEVSYS_ERROR = 30) are plain ints here. */
typedef enum {
	CNDEV_HEALTH_RESULT_PASS = 0,
	CNDEV_HEALTH_RESULT_WARN = 10,
	CNDEV_HEALTH_RESULT_FAIL = 20,
} cndevHealthResult_t;

#define CNDEV_ERR_MSG_LENGTH 512
#define CNDEV_HEALTH_SYSTEM_MAX_INCIDENTS 64

typedef struct {
	char msg[CNDEV_ERR_MSG_LENGTH];
	uint32_t device_id;
	uint32_t bdf;
	int32_t code; /* cndevHealthError_t */
	uint32_t category;
	uint32_t severity;
} cndevDiagErrorDetail_t;

typedef struct {
	int32_t system; /* cndevHealthSystem_t */
	cndevHealthResult_t health;
	cndevDiagErrorDetail_t error;
} cndevIncidentInfo_t;

typedef struct {
	int32_t health;
	cndevHealthStateEnum_t deviceState;
	cndevDriverHealthStateEnum_t driverState;
	cndevHealthResult_t overallHealth;
	uint32_t incident_count;
	cndevIncidentInfo_t incidents[CNDEV_HEALTH_SYSTEM_MAX_INCIDENTS];
	uint32_t reserved[8];
} cndevCardHealthStateV2_t;

typedef struct {
	uint32_t subsystemId;
	uint32_t deviceId;
	uint16_t vendor;
	uint16_t subsystemVendor;
	uint32_t domain;
	uint32_t bus;
	uint32_t device;
	uint32_t function;
	uint16_t moduleId;
	uint16_t slotId;
	uint32_t reserved[8];
} cndevPCIeInfoV2_t;

typedef struct {
	cndevMLULinkMACStateEnum_t macState;
	cndevMLULinkSerdesStateEnum_t serdesState;
	cndevMLULinkPresenceStateEnum_t presenceState;
	uint32_t serdesProgress;
	uint32_t reserved[7];
} cndevMLULinkStatusV2_t;

typedef struct {
	int32_t version;
	uint64_t mcSn;
	uint64_t baSn;
	uint32_t slotId;
	uint32_t portId;
	uint8_t devIp[16];
	uint8_t uuid[CNDEV_UUID_SIZE];
	uint32_t devIpVersion;
	uint32_t isIpValid;
	int32_t connectType;
	uint64_t ncsUUID64;
	uint8_t mac_addr[CNDEV_MAC_ADDRESS_LEN];
	char port_name[CNDEV_MLU_REMOTE_PORT_NAME_LEN];
} cndevMLULinkRemoteInfo_t;

typedef struct {
	int32_t version;
	cndevEnableStatusEnum_t smluMode;
} cndevSMLUMode_t;

typedef struct {
	int32_t version;
	int32_t profileId;
	int32_t instanceId;
	uint8_t uuid[CNDEV_UUID_SIZE];
	int32_t domain;
	int32_t bus;
	int32_t device;
	int32_t function;
	char profileName[CNDEV_MLUINSTANCE_PROFILE_NAME_BUFFER_SIZE];
	char instanceName[CNDEV_MLUINSTANCE_PROFILE_NAME_BUFFER_SIZE];
	char devNodeName[CNDEV_MLUINSTANCE_DEVICE_NODE_NAME_BUFFER_SIZE];
	uint32_t mluQuota[CNDEV_SMLU_ITEM_COUNT];
	uint64_t memorySize[CNDEV_SMLU_ITEM_COUNT];
	uint32_t reserved[128];
} cndevSMluInfo_t;

typedef struct {
	int32_t version;
	int32_t count;
	int32_t profileId[128];
} cndevSMluProfileIdInfo_t;

typedef struct {
	int32_t version;
	int32_t profileId;
	char name[CNDEV_MLUINSTANCE_PROFILE_NAME_BUFFER_SIZE];
	uint32_t totalCapacity;
	uint32_t remainCapacity;
	uint32_t mluQuota[CNDEV_SMLU_ITEM_COUNT];
	uint64_t memorySize[CNDEV_SMLU_ITEM_COUNT];
} cndevSMluProfileInfo_t;

/* A new sMLU profile's IPU quota (percent) and memory size (bytes):
 * cndevSMluSet_t, mlu-exporter@934abae pkg/cndev/include/cndev.h lines
 * 1499-1504. */
typedef struct {
	int32_t version;
	uint32_t mluQuota;
	uint64_t memorySize;
} cndevSMluSet_t;

cndevRet_t cndevInit(int32_t reserved);
cndevRet_t cndevRelease(void);
const char *cndevGetErrorString(cndevRet_t errorId);
cndevRet_t cndevGetDeviceCount(cndevCardInfo_t *cardNum);
cndevRet_t cndevGetDeviceHandleByIndex(int32_t index, cndevDevice_t *handle);
cndevRet_t cndevGetUUID(cndevUUID_t *uuidInfo, cndevDevice_t device);
const char *cndevGetCardNameStringByDevId(cndevDevice_t device);
cndevRet_t cndevGetMemoryUsageV2(cndevMemoryInfoV2_t *memInfo, cndevDevice_t device);
cndevRet_t cndevGetVersionInfo(cndevVersionInfo_t *versInfo, cndevDevice_t device);
cndevRet_t cndevGetCoreCount(cndevCardCoreCount_t *cardCoreCount, cndevDevice_t device);
cndevRet_t cndevGetCardHealthState(cndevCardHealthState_t *cardHealthState, cndevDevice_t device);
cndevRet_t cndevGetCardHealthStateV2(cndevCardHealthStateV2_t *cardHealthState, cndevDevice_t device);
cndevRet_t cndevGetPCIeInfoV2(cndevPCIeInfoV2_t *deviceInfo, cndevDevice_t device);
int32_t cndevGetMLULinkPortNumber(cndevDevice_t device);
cndevRet_t cndevGetMLULinkStatusV2(cndevMLULinkStatusV2_t *status, cndevDevice_t device, int32_t link);
cndevRet_t cndevGetMLULinkRemoteInfo(cndevMLULinkRemoteInfo_t *remoteinfo, cndevDevice_t device, int32_t link);
cndevRet_t cndevGetSMLUMode(cndevSMLUMode_t *mode, cndevDevice_t device);
cndevRet_t cndevGetSMluProfileIdInfo(cndevSMluProfileIdInfo_t *profileId, cndevDevice_t device);
cndevRet_t cndevGetSMluProfileInfo(cndevSMluProfileInfo_t *profileInfo, int32_t profile, cndevDevice_t device);
cndevRet_t cndevCreateSMluInstanceByProfileId(cndevMluInstance_t *miHandle, uint32_t profileId, cndevDevice_t device, char *instanceName);
cndevRet_t cndevGetAllSMluInstanceInfo(int32_t *count, cndevSMluInfo_t *miInfo, cndevDevice_t device);
cndevRet_t cndevDestroySMluInstanceByInstanceName(cndevDevice_t device, char *instanceName);
/* Dynamic sMLU profiles: the same header, lines 5262 and 5284. */
cndevRet_t cndevCreateSMluProfileInfo(cndevSMluSet_t *profileInfo, int32_t *profileId, cndevDevice_t device);
cndevRet_t cndevDestroySMluProfileInfo(int32_t profileId, cndevDevice_t device);

/*
 * Telemetry (the node agent's chip metrics): field for field the structs
 * of the same public cndev.h (mlu-exporter@934abae pkg/cndev/include/cndev.h
 * lines 373-381 cndevDevicePowerInfo_t, 383-407 cndevTemperatureInfo_t,
 * 419-426 cndevUtilizationInfo_t) and its prototypes (lines 2132, 4215,
 * 4498), which mlu-exporter calls in pkg/cndev/cndev.go GetDevicePower
 * (line 1158), GetDeviceTemperature (1495) and GetDeviceUtil (1578).
 */
typedef struct {
	int32_t usage;    /* W */
	int32_t cap;
	int32_t machine;
	int32_t tdp;
	int32_t maxPower;
	int32_t reserved[16];
} cndevDevicePowerInfo_t;

typedef struct {
	int32_t version;
	int32_t board;    /* °C, the board's maximum */
	int32_t cluster[20];
	int32_t memoryDie[8];
	int32_t chip;
	int32_t airInlet;
	int32_t airOutlet;
	int32_t memory;
	int32_t videoInput;
	int32_t cpu;
	int32_t isp;
} cndevTemperatureInfo_t;

typedef struct {
	int32_t version;
	int32_t averageCoreUtilization; /* % */
	int32_t coreUtilization[80];
} cndevUtilizationInfo_t;

cndevRet_t cndevGetDevicePowerInfo(cndevDevicePowerInfo_t *powerInfo, cndevDevice_t device);
cndevRet_t cndevGetTemperatureInfo(cndevTemperatureInfo_t *tempInfo, cndevDevice_t device);
cndevRet_t cndevGetDeviceUtilizationInfo(cndevUtilizationInfo_t *utilInfo, cndevDevice_t device);

#endif
